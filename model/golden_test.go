package model

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/grpokit/grpokit/internal/sharedtest"
)

// sharedDir returns ../shared, or skips the test when it is absent.
func sharedDir(t testing.TB) string { return sharedtest.Dir(t) }

// golden is one case of shared/golden.
type golden struct {
	dir  string
	JSON struct {
		InputIDs      [][]int `json:"input_ids"`
		AttentionMask [][]int `json:"attention_mask"`
		PositionIDs   [][]int `json:"position_ids"`
		Generate      struct {
			MaxNewTokens int     `json:"max_new_tokens"`
			NewTokens    [][]int `json:"new_tokens"`
		} `json:"generate"`
	}
	tensors map[string]NamedTensor
}

func loadGolden(t testing.TB, name string) *golden {
	t.Helper()
	g := &golden{dir: filepath.Join(sharedDir(t), "golden", name), tensors: map[string]NamedTensor{}}
	data, err := os.ReadFile(filepath.Join(g.dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &g.JSON); err != nil {
		t.Fatal(err)
	}
	ts, err := ReadSafetensors(filepath.Join(g.dir, "golden.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ts {
		g.tensors[x.Name] = x
	}
	return g
}

func (g *golden) batch() Batch {
	return Batch{IDs: g.JSON.InputIDs, Mask: g.JSON.AttentionMask, Positions: g.JSON.PositionIDs}
}

// checkClose compares got and want (flat [B*T*inner]) at real tokens only
// and returns the largest difference.
func checkClose(t *testing.T, what string, got, want []float32, mask [][]int, inner int, atol, rtol float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	T := len(mask[0])
	worst, bad := 0.0, 0
	for b := range mask {
		for ti := range T {
			if mask[b][ti] == 0 {
				continue
			}
			for k := range inner {
				i := (b*T+ti)*inner + k
				d := math.Abs(float64(got[i] - want[i]))
				worst = max(worst, d)
				if d > atol+rtol*math.Abs(float64(want[i])) {
					if bad < 3 {
						t.Errorf("%s[%d,%d,%d] = %v, want %v", what, b, ti, k, got[i], want[i])
					}
					bad++
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d values out of tolerance, max |diff| %g", what, bad, worst)
	}
	if !quiet(what) {
		t.Logf("%s: max |diff| %.3g", what, worst)
	}
	return worst
}

// quiet reports checks that log their own summary (one per step otherwise).
func quiet(what string) bool { return what == "step_logits" }

var goldenCases = []string{"llama-tiny", "qwen2-tiny", "qwen3-tiny", "gemma3-tiny", "gemma3-mm-tiny"}

func TestGoldenLogits(t *testing.T) {
	for _, name := range goldenCases {
		t.Run(name, func(t *testing.T) {
			g := loadGolden(t, name)
			for _, w := range []struct{ file, key string }{
				{"", "logits"}, {"model.bf16.safetensors", "logits_bf16w"},
			} {
				m, err := Load(g.dir, &Options{WeightsFile: w.file})
				if err != nil {
					t.Fatal(err)
				}
				got, err := m.Logits(g.batch())
				if err != nil {
					t.Fatal(err)
				}
				want := g.tensors[w.key]
				checkClose(t, w.key, got, want.Data, g.JSON.AttentionMask, want.Shape[2], 2e-4, 2e-4)
			}
		})
	}
}

func TestGoldenTokenLogProbs(t *testing.T) {
	for _, name := range goldenCases {
		t.Run(name, func(t *testing.T) {
			g := loadGolden(t, name)
			m, err := Load(g.dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			lp, err := m.TokenLogProbs(g.batch())
			if err != nil {
				t.Fatal(err)
			}
			var got []float32
			mask := make([][]int, len(lp))
			for b, row := range lp {
				got = append(got, row...)
				mask[b] = g.JSON.AttentionMask[b][:len(row)]
			}
			checkClose(t, "token_logprobs", got, g.tensors["token_logprobs"].Data, mask, 1, 2e-4, 0)
		})
	}
}
