package rewardmodel

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"

	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/tokenizer"
)

// golden is testdata/golden.json, written by testdata/make_golden.py: an
// independent float64 implementation of transformers'
// <Family>ForSequenceClassification forward and pooling (pure Python).
type golden struct {
	PadTokenID int     `json:"pad_token_id"`
	IDRows     [][]int `json:"id_rows"`
	Samples    []struct {
		Prompt     string `json:"prompt"`
		Completion string `json:"completion"`
		Messages   []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	} `json:"samples"`
	Families map[string]struct {
		Dir     string   `json:"dir"`
		IDRows  []scored `json:"id_rows"`
		Texts   []string `json:"texts"`
		TextIDs [][]int  `json:"text_ids"`
		Samples []scored `json:"samples"`
	} `json:"families"`
}

type scored struct {
	PooledIndex int     `json:"pooled_index"`
	Score       float64 `json:"score"`
}

func loadGolden(t *testing.T) golden {
	t.Helper()
	b, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Families) != 4 {
		t.Fatalf("golden has %d families, want 4", len(g.Families))
	}
	return g
}

// folder copies a golden checkpoint into a temporary folder and adds the
// tiny tokenizer the golden texts were tokenized with (byte b is token b;
// <|endoftext|>, the pad, 256; <|im_start|> 257; <|im_end|> 258; ChatML).
func folder(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join("testdata", dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := tokenizer.WriteTinyDir(out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

func (g golden) samples() []reward.Sample {
	out := make([]reward.Sample, len(g.Samples))
	for i, s := range g.Samples {
		out[i] = reward.Sample{Prompt: s.Prompt, Completion: s.Completion}
		for _, m := range s.Messages {
			out[i].Messages = append(out[i].Messages, reward.Message{Role: m.Role, Content: m.Content})
		}
	}
	return out
}

// TestGoldenScores loads each family's tiny reward model and compares its
// scores of token rows and of samples (chat template, tokenization, right
// padding, pooling) with the float64 reference: float32 compute within
// 1e-4 (absolute + relative), the pooled positions as transformers picks
// them (pad ids inside a text, at its end, a text of pad ids only).
func TestGoldenScores(t *testing.T) {
	g := loadGolden(t)
	for _, family := range []string{"llama", "qwen2", "qwen3", "gemma3_text"} {
		fam := g.Families[family]
		t.Run(family, func(t *testing.T) {
			rm, err := Load(folder(t, fam.Dir), &Options{BatchSize: 4})
			if err != nil {
				t.Fatal(err)
			}
			if rm.PadID() != g.PadTokenID {
				t.Fatalf("pad id %d, golden %d", rm.PadID(), g.PadTokenID)
			}
			for i, r := range g.IDRows {
				if got := pooled(append(slices.Clone(r), g.PadTokenID, g.PadTokenID), g.PadTokenID); got != fam.IDRows[i].PooledIndex {
					t.Errorf("row %d pooled at %d, transformers at %d", i, got, fam.IDRows[i].PooledIndex)
				}
			}
			got, err := rm.ScoreIDs(context.Background(), g.IDRows)
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for i, w := range fam.IDRows {
				d := math.Abs(got[i] - w.Score)
				worst = max(worst, d)
				if !(d <= 1e-4+1e-4*math.Abs(w.Score)) {
					t.Errorf("row %d: score %.6f, golden %.6f", i, got[i], w.Score)
				}
			}
			samples := g.samples()
			for i, s := range samples {
				text, err := rm.Text(s)
				if err != nil {
					t.Fatal(err)
				}
				if text != fam.Texts[i] {
					t.Errorf("sample %d: text %q, want %q", i, text, fam.Texts[i])
				}
				if ids := rm.Tokenizer().Tokenizer.Encode(text, false); !slices.Equal(ids, fam.TextIDs[i]) {
					t.Errorf("sample %d: ids %v, want %v", i, ids, fam.TextIDs[i])
				}
			}
			got, err = rm.ScoreBatch(context.Background(), samples)
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range fam.Samples {
				d := math.Abs(got[i] - w.Score)
				worst = max(worst, d)
				if !(d <= 1e-4+1e-4*math.Abs(w.Score)) {
					t.Errorf("sample %d: score %.6f, golden %.6f", i, got[i], w.Score)
				}
			}
			if one := rm.Score(samples[2]); math.Abs(one-got[2]) > 1e-5 {
				t.Errorf("Score alone %.6f, in a batch %.6f", one, got[2])
			}
			t.Logf("max |score − golden| %.2g", worst)
		})
	}
}

// TestGoldenScoresLowPrecision runs the golden rows with the weights held
// in bf16 or NF4 and with bf16 compute, and checks that the weights take
// less memory than float32's. Rounding moves the scores (of magnitude
// 0.02–3.5 here): bf16 storage by at most 0.026, bf16 compute by 0.051
// (measured), bounded at a few times that, below what a wrong pooling or
// head gives (neighbouring positions' scores differ by about 1–3). NF4
// (4-bit weights of 32-wide matrices) moves them by 0.34–1.13: that bound
// only checks the quantized model runs and stays near.
func TestGoldenScoresLowPrecision(t *testing.T) {
	g := loadGolden(t)
	for _, c := range []struct {
		name  string
		opts  Options
		bound float64
	}{
		{"bf16-storage", Options{Storage: model.StorageBF16}, 0.1},
		{"bf16-compute", Options{Storage: model.StorageBF16, Compute: dtypes.BFloat16}, 0.3},
		{"nf4-storage", Options{Storage: model.StorageNF4}, 1.5},
	} {
		for _, family := range []string{"llama", "qwen2", "qwen3", "gemma3_text"} {
			fam := g.Families[family]
			t.Run(c.name+"/"+family, func(t *testing.T) {
				opts := c.opts
				rm, err := Load(folder(t, fam.Dir), &opts)
				if err != nil {
					t.Fatal(err)
				}
				got, err := rm.ScoreIDs(context.Background(), g.IDRows)
				if err != nil {
					t.Fatal(err)
				}
				worst := 0.0
				for i, w := range fam.IDRows {
					worst = max(worst, math.Abs(got[i]-w.Score))
				}
				t.Logf("max |score − golden| %.3g, weights held in %d bytes", worst, rm.HeldBytes())
				f32 := int64(0)
				for _, w := range rm.Config().Weights() {
					if w.Name != "lm_head.weight" {
						f32 += 4 * int64(product(w.Shape))
					}
				}
				if rm.HeldBytes() >= f32 {
					t.Errorf("weights held in %d bytes, float32 would take %d", rm.HeldBytes(), f32)
				}
				if !(worst <= c.bound) {
					t.Errorf("max |score − golden| %.3g, want ≤ %g", worst, c.bound)
				}
			})
		}
	}
}

// TestLoadErrors: what is not a one-label sequence classifier of a
// supported family is refused with the reason.
func TestLoadErrors(t *testing.T) {
	g := loadGolden(t)
	src := folder(t, g.Families["llama"].Dir)
	edit := func(t *testing.T, f func(cfg map[string]any)) string {
		dir := t.TempDir()
		for _, name := range []string{"model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
			b, err := os.ReadFile(filepath.Join(src, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var cfg map[string]any
		b, _ := os.ReadFile(filepath.Join(src, "config.json"))
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		f(cfg)
		b, _ = json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, c := range []struct {
		name string
		f    func(cfg map[string]any)
		want string
	}{
		{"causal LM", func(c map[string]any) { c["architectures"] = []string{"LlamaForCausalLM"} }, `architecture "LlamaForCausalLM" is not a reward model`},
		{"two labels", func(c map[string]any) { c["id2label"] = map[string]string{"0": "a", "1": "b"} }, "num_labels 2"},
		{"num_labels", func(c map[string]any) { c["num_labels"] = 3 }, "num_labels 3"},
		{"family", func(c map[string]any) { c["model_type"] = "mistral" }, `model_type "mistral"`},
		{"hidden size", func(c map[string]any) { c["hidden_size"] = 48 }, "model.embed_tokens.weight"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(edit(t, c.f), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
	t.Run("no score head", func(t *testing.T) {
		dir := edit(t, func(map[string]any) {})
		ts, err := model.ReadSafetensors(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		ts = slices.DeleteFunc(ts, func(x model.NamedTensor) bool { return x.Name == "score.weight" })
		if err := model.WriteSafetensors(filepath.Join(dir, "model.safetensors"), ts); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir, nil); err == nil || !strings.Contains(err.Error(), `"score.weight"`) {
			t.Fatalf("error %v, want one naming score.weight", err)
		}
	})
	t.Run("bad ids", func(t *testing.T) {
		rm, err := Load(src, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rm.ScoreIDs(context.Background(), [][]int{{1, 2}, {5000}}); err == nil || !strings.Contains(err.Error(), "token id 5000") {
			t.Fatalf("error %v, want one naming the id", err)
		}
		v, err := rm.ScoreIDs(context.Background(), [][]int{{}, {1}})
		if err != nil || !math.IsNaN(v[0]) || math.IsNaN(v[1]) {
			t.Fatalf("empty row: %v, %v; want NaN for it only", v, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := rm.ScoreIDs(ctx, [][]int{{1}}); err == nil {
			t.Fatal("a cancelled context scored")
		}
	})
}

// TestEvaluatorBatches: an Evaluator gives the reward model the whole
// batch in one call, beside a plain reward, and its scores are the
// model's.
func TestEvaluatorBatches(t *testing.T) {
	g := loadGolden(t)
	fam := g.Families["qwen2"]
	rm, err := Load(folder(t, fam.Dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := &reward.Evaluator{Rewards: []reward.Named{
		{Name: "len", Weight: 1, Scorer: reward.Func(func(_, c, _ string) float64 { return float64(len(c)) })},
		{Name: "rm", Weight: 0.5, Scorer: rm},
	}}
	res, err := ev.Evaluate(context.Background(), g.samples())
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range fam.Samples {
		if d := math.Abs(res.Scores[1][i] - w.Score); d > 1e-4+1e-4*math.Abs(w.Score) || res.Failures[1][i] != reward.OK {
			t.Errorf("sample %d: %v (%v), golden %.6f", i, res.Scores[1][i], res.Failures[1][i], w.Score)
		}
		if want := float64(len(g.Samples[i].Completion)) + 0.5*res.Scores[1][i]; math.Abs(res.Totals[i]-want) > 1e-12 {
			t.Errorf("total %v, want %v", res.Totals[i], want)
		}
	}
}

func product(d []int) int {
	p := 1
	for _, v := range d {
		p *= v
	}
	return p
}

// TestMemoryBytes: the weights are the held variables plus the score
// head; the forward's transient memory grows with rows (up to BatchSize)
// and with tokens.
func TestMemoryBytes(t *testing.T) {
	g := loadGolden(t)
	rm, err := Load(folder(t, g.Families["qwen3"].Dir), &Options{BatchSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	w, f := rm.MemoryBytes(2, 100)
	want := int64(0)
	for _, x := range rm.Config().Weights() {
		if x.Name != "lm_head.weight" {
			want += 4 * int64(product(x.Shape))
		}
	}
	want += 4 * int64(rm.Config().HiddenSize) // score.weight
	if w != want {
		t.Errorf("weights %d bytes, want %d (float32 decoder + score head)", w, want)
	}
	if est := HeldBytes(rm.Config(), model.StorageF32, "F32", false); est != w {
		t.Errorf("HeldBytes from the config %d, loaded %d", est, w)
	}
	for _, st := range []model.Storage{model.StorageBF16, model.StorageNF4} {
		rl, err := Load(folder(t, g.Families["qwen3"].Dir), &Options{Storage: st})
		if err != nil {
			t.Fatal(err)
		}
		if lw, _ := rl.MemoryBytes(1, 1); lw != HeldBytes(rl.Config(), st, "F32", false) {
			t.Errorf("%s: HeldBytes from the config %d, loaded %d", st, HeldBytes(rl.Config(), st, "F32", false), lw)
		}
	}
	_, f4 := rm.MemoryBytes(4, 100)
	_, f8 := rm.MemoryBytes(8, 100)
	_, fLong := rm.MemoryBytes(2, 400)
	if !(f > 0 && f4 == 2*f && f8 == f4 && fLong > 4*f) {
		t.Errorf("forward bytes: 2 rows %d, 4 rows %d, 8 rows (batch 4) %d, 2 rows × 4 tokens %d", f, f4, f8, fLong)
	}
}

// A reward model's memory counts in the trainer's memory plan.
var _ grpo.MemoryHolder = (*Model)(nil)
