package loss

import (
	"fmt"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/grpokit/grpokit/internal/backend"
)

// TestLossGolden checks the per-token ratio, KL and loss and the loss
// scalars of every loss type against TRL v0.21.0 (golden.safetensors), from
// the golden per-token log-probs.
func TestLossGolden(t *testing.T) {
	g, ts := loadGoldenGRPO(t, "llama-tiny")
	b := backend.Must("")
	spec := Spec{Epsilon: g.Epsilon, EpsilonHigh: g.EpsilonHigh, Beta: g.Beta}
	logp := ts["grpo.per_token_logps"]
	ref := ts["grpo.ref_per_token_logps"]
	adv := make([]float32, len(g.Advantages))
	for i, a := range g.Advantages {
		adv[i] = float32(a)
	}
	rows, cols := logp.Shape[0], logp.Shape[1]
	tokens := 0
	for _, r := range g.CompletionMask {
		for _, v := range r {
			tokens += int(v)
		}
	}
	norm := StepNormalizers{Rows: rows, Tokens: tokens, MicroBatch: 1, MaxCompletionLength: g.MaxCompletionLength}

	exec, err := graph.NewExec(b, func(logp, old, ref, adv, w *graph.Node) []*graph.Node {
		terms := TokenLoss(Inputs{LogP: logp, Old: old, Ref: ref, Adv: adv}, spec)
		return []*graph.Node{terms.PerToken, terms.Ratio, terms.KL, WeightedLoss(terms.PerToken, w)}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, variant := range []string{"onpolicy", "offpolicy"} {
		old := ts["grpo."+variant+".old_per_token_logps"]
		for _, lt := range []Type{GRPO, BNPO, DrGRPO, DAPO} {
			t.Run(fmt.Sprintf("%s/%s", variant, lt), func(t *testing.T) {
				w := TokenWeights(g.CompletionMask, lt, norm)
				out, err := exec.Exec(
					tensors.FromFlatDataAndDimensions(logp.Data, rows, cols),
					tensors.FromFlatDataAndDimensions(old.Data, rows, cols),
					tensors.FromFlatDataAndDimensions(ref.Data, rows, cols),
					tensors.FromFlatDataAndDimensions(adv, rows),
					tensors.FromValue(w))
				if err != nil {
					t.Fatal(err)
				}
				for i, name := range []string{"per_token_loss", "ratio", "per_token_kl"} {
					got := tensors.MustCopyFlatData[float32](out[i])
					want := ts["grpo."+variant+"."+name].Data
					for j := range want {
						if g.CompletionMask[j/cols][j%cols] == 0 {
							continue // compare valid positions only
						}
						if !closeTo(float64(got[j]), float64(want[j]), 1e-4, 1e-4) {
							t.Errorf("%s[%d,%d] = %.7g, golden %.7g", name, j/cols, j%cols, got[j], want[j])
						}
					}
				}
				goldenKey := string(lt)
				if lt == DAPO {
					// With one micro-batch DAPO's normalizer equals BNPO's.
					goldenKey = string(BNPO)
				}
				want := g.Loss[variant][goldenKey]
				got := float64(tensors.ToScalar[float32](out[3]))
				if !closeTo(got, want, 1e-5, 1e-4) {
					t.Errorf("loss = %.9g, golden %.9g", got, want)
				}
			})
		}
	}
}

func TestTokenWeights(t *testing.T) {
	mask := [][]float32{{1, 1, 0, 0}, {1, 1, 1, 1}, {0, 0, 0, 0}}
	n := StepNormalizers{Rows: 4, Tokens: 12, MicroBatch: 2, MaxCompletionLength: 5}
	tests := []struct {
		lt   Type
		want [][]float32
	}{
		// grpo: 1/(row tokens · rows)
		{GRPO, [][]float32{{1.0 / 8, 1.0 / 8, 0, 0}, {1.0 / 16, 1.0 / 16, 1.0 / 16, 1.0 / 16}, {0, 0, 0, 0}}},
		// bnpo: 1/(micro tokens (6) · micro-batches (2))
		{BNPO, [][]float32{{1.0 / 12, 1.0 / 12, 0, 0}, {1.0 / 12, 1.0 / 12, 1.0 / 12, 1.0 / 12}, {0, 0, 0, 0}}},
		// dr_grpo: 1/(rows · max length)
		{DrGRPO, [][]float32{{1.0 / 20, 1.0 / 20, 0, 0}, {1.0 / 20, 1.0 / 20, 1.0 / 20, 1.0 / 20}, {0, 0, 0, 0}}},
		// dapo: 1/step tokens
		{DAPO, [][]float32{{1.0 / 12, 1.0 / 12, 0, 0}, {1.0 / 12, 1.0 / 12, 1.0 / 12, 1.0 / 12}, {0, 0, 0, 0}}},
	}
	for _, tc := range tests {
		got := TokenWeights(mask, tc.lt, n)
		for b := range tc.want {
			for j := range tc.want[b] {
				if !closeTo(float64(got[b][j]), float64(tc.want[b][j]), 1e-9, 1e-6) {
					t.Errorf("%s: w[%d][%d] = %g, want %g", tc.lt, b, j, got[b][j], tc.want[b][j])
				}
			}
		}
	}
}
