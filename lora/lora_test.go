package lora

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/internal/sharedtest"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/model"
)

func goldenDir(t testing.TB, name string) string { return sharedtest.Dir(t, "golden", name) }

type goldenCase struct {
	dir     string
	batch   model.Batch
	tensors map[string]model.NamedTensor
}

func loadCase(t testing.TB, name string) goldenCase {
	t.Helper()
	dir := goldenDir(t, name)
	var js struct {
		InputIDs      [][]int `json:"input_ids"`
		AttentionMask [][]int `json:"attention_mask"`
		PositionIDs   [][]int `json:"position_ids"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &js); err != nil {
		t.Fatal(err)
	}
	ts, err := model.ReadSafetensors(filepath.Join(dir, "golden.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	c := goldenCase{dir: dir, batch: model.Batch{IDs: js.InputIDs, Mask: js.AttentionMask, Positions: js.PositionIDs}, tensors: map[string]model.NamedTensor{}}
	for _, x := range ts {
		c.tensors[x.Name] = x
	}
	return c
}

// checkLogits compares flat [B*T*V] logits at real tokens.
func checkLogits(t *testing.T, what string, got, want []float32, mask [][]int, atol, rtol float64) {
	t.Helper()
	T := len(mask[0])
	V := len(want) / (len(mask) * T)
	worst := 0.0
	for b := range mask {
		for ti := range T {
			if mask[b][ti] == 0 {
				continue
			}
			for k := range V {
				i := (b*T+ti)*V + k
				d := math.Abs(float64(got[i] - want[i]))
				worst = max(worst, d)
				if d > atol+rtol*math.Abs(float64(want[i])) {
					t.Fatalf("%s[%d,%d,%d] = %v, want %v", what, b, ti, k, got[i], want[i])
				}
			}
		}
	}
	t.Logf("%s: max |diff| %.3g", what, worst)
}

var cases = []string{"llama-tiny", "qwen2-tiny", "qwen3-tiny", "gemma3-tiny", "gemma3-mm-tiny"}

func TestGoldenPEFTAdapter(t *testing.T) {
	for _, name := range cases {
		t.Run(name, func(t *testing.T) {
			c := loadCase(t, name)
			m, err := model.Load(c.dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			a, err := Load(m, filepath.Join(c.dir, "lora"))
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Config(); got.R != 4 || got.Scaling() != 2 || !slices.Equal(got.TargetModules, []string{"q_proj", "v_proj"}) {
				t.Fatalf("config = %+v", got)
			}
			logits, err := m.Logits(c.batch)
			if err != nil {
				t.Fatal(err)
			}
			checkLogits(t, "lora.logits", logits, c.tensors["lora.logits"].Data, c.batch.Mask, 2e-4, 2e-4)
			lp, err := m.TokenLogProbs(c.batch)
			if err != nil {
				t.Fatal(err)
			}
			want := c.tensors["lora.token_logprobs"].Data
			for b, row := range lp {
				for ti, v := range row {
					if c.batch.Mask[b][ti] == 1 && math.Abs(float64(v-want[b*len(row)+ti])) > 2e-4 {
						t.Fatalf("lora.token_logprobs[%d,%d] = %v, want %v", b, ti, v, want[b*len(row)+ti])
					}
				}
			}

			// Save → Load round trip is exact.
			dir := t.TempDir()
			if err := a.Save(dir); err != nil {
				t.Fatal(err)
			}
			m2, err := model.Load(c.dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			a2, err := Load(m2, dir)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range a.Variables() {
				x, _ := tensors.CopyFlatData[float32](v.MustValue())
				y, _ := tensors.CopyFlatData[float32](a2.Variables()[i].MustValue())
				if !slices.Equal(x, y) || v.Scope() != a2.Variables()[i].Scope() {
					t.Fatalf("round trip changed %s", v.Scope())
				}
			}
			// The saved file uses PEFT's keys.
			ts, err := model.ReadSafetensors(filepath.Join(dir, "adapter_model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			first := "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
			if name == "gemma3-mm-tiny" {
				first = "base_model.model.model.language_model.layers.0.self_attn.q_proj.lora_A.weight"
			}
			if ts[0].Name != first {
				t.Errorf("first key %q", ts[0].Name)
			}

			// The merged model reproduces lora.logits without an adapter.
			merged := t.TempDir()
			if err := a.SaveMerged(merged); err != nil {
				t.Fatal(err)
			}
			mm, err := model.Load(merged, nil)
			if err != nil {
				t.Fatal(err)
			}
			ml, err := mm.Logits(c.batch)
			if err != nil {
				t.Fatal(err)
			}
			checkLogits(t, "merged lora.logits", ml, c.tensors["lora.logits"].Data, c.batch.Mask, 2e-4, 2e-4)

			// Merge in place gives the same, with the adapter detached.
			if err := a.Merge(); err != nil {
				t.Fatal(err)
			}
			if m.Adapter() != nil {
				t.Fatal("Merge left the adapter attached")
			}
			ml2, err := m.Logits(c.batch)
			if err != nil {
				t.Fatal(err)
			}
			checkLogits(t, "Merge lora.logits", ml2, c.tensors["lora.logits"].Data, c.batch.Mask, 2e-4, 2e-4)
		})
	}
}

func TestAttachFreshAdapter(t *testing.T) {
	c := loadCase(t, "qwen2-tiny")
	m, err := model.Load(c.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.TrainableVariables()); n != len(m.BaseVariables()) {
		t.Fatalf("before Attach: %d trainable variables, want all %d", n, len(m.BaseVariables()))
	}
	a, err := Attach(m, Config{R: 2, Alpha: 4, RSLoRA: true, TargetModules: []string{"q_proj", "down_proj"}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if s := a.Config().Scaling(); math.Abs(s-4/math.Sqrt(2)) > 1e-12 {
		t.Errorf("rsLoRA scaling %g", s)
	}
	tv := m.TrainableVariables()
	if len(tv) != 8 || len(a.Variables()) != 8 {
		t.Fatalf("trainable = %d, adapter vars = %d, want 8 (2 layers × 2 modules × A,B)", len(tv), len(a.Variables()))
	}
	for _, v := range tv {
		if !strings.Contains(v.Scope(), "/lora_") {
			t.Errorf("trainable base variable %s", v.Scope())
		}
	}
	// B = 0: logits equal the base model's.
	logits, err := m.Logits(c.batch)
	if err != nil {
		t.Fatal(err)
	}
	checkLogits(t, "fresh adapter logits", logits, c.tensors["logits"].Data, c.batch.Mask, 2e-4, 2e-4)

	// Gradients reach the adapter (only).
	ids := tensors.FromValue(int32Rows(c.batch.IDs))
	mask := tensors.FromValue(int32Rows(c.batch.Mask))
	pos := tensors.FromValue(int32Rows(c.batch.Positions))
	e, err := mlctx.NewExec(m.Backend(), m.Context(), func(ctx *mlctx.Context, ids, mask, pos *Node) []*Node {
		lp, _ := model.TokenLogProbs(m.LogitsGraph(ctx, ids, mask, pos), ids, 1)
		loss := ReduceAllSum(Mul(lp, ConvertDType(mask, lp.DType())))
		return ctx.BuildTrainableVariablesGradientsGraph(loss)
	})
	if err != nil {
		t.Fatal(err)
	}
	grads, err := e.Exec(ids, mask, pos)
	if err != nil {
		t.Fatal(err)
	}
	if len(grads) != 8 {
		t.Fatalf("%d gradients, want 8", len(grads))
	}
	for i, g := range grads {
		data, _ := tensors.CopyFlatData[float32](g)
		norm := 0.0
		for _, v := range data {
			norm += float64(v * v)
		}
		// With B = 0, dL/dA = 0 and dL/dB ≠ 0.
		if isB := strings.Contains(tv[i].Scope(), "lora_B"); isB != (norm > 0) {
			t.Errorf("gradient of %s has squared norm %g", tv[i].Scope(), norm)
		}
	}

	// Generation uses the adapter: give B a value and greedy output changes.
	base, err := m.Generate(context.Background(), [][]int{{1, 5, 9}}, model.GenerateConfig{MaxNewTokens: 6, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range a.Variables() {
		if strings.Contains(v.Scope(), "lora_B") {
			d := make([]float32, v.Shape().Size())
			for i := range d {
				d[i] = float32(math.Sin(float64(i))) * 2
			}
			v.MustSetValue(tensors.FromFlatDataAndDimensions(d, v.Shape().Dimensions...))
		}
	}
	adapted, err := m.Generate(context.Background(), [][]int{{1, 5, 9}}, model.GenerateConfig{MaxNewTokens: 6, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(base[0].Tokens, adapted[0].Tokens) {
		t.Errorf("generation ignored the adapter: %v", adapted[0].Tokens)
	}
	// And it equals greedy generation from the merged model.
	dir := t.TempDir()
	if err := a.SaveMerged(dir); err != nil {
		t.Fatal(err)
	}
	mm, err := model.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := mm.Generate(context.Background(), [][]int{{1, 5, 9}}, model.GenerateConfig{MaxNewTokens: 6, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(want[0].Tokens, adapted[0].Tokens) {
		t.Errorf("adapter generation %v, merged model %v", adapted[0].Tokens, want[0].Tokens)
	}
}

func int32Rows(rows [][]int) [][]int32 {
	out := make([][]int32, len(rows))
	for i, r := range rows {
		for _, v := range r {
			out[i] = append(out[i], int32(v))
		}
	}
	return out
}
