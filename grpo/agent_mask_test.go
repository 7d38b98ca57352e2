package grpo

import (
	"slices"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/model"
)

// TestToolTokensMasked packs two trajectories — a call, the inserted
// result, an answer; and an answer alone — and checks, for every loss
// type, that the tokens a tool inserted take no part in the loss: the
// gradient of the loss (policy term, KL and entropy bonus, built as the
// training graph builds them) with respect to their log-probs and
// entropies is exactly zero, while the model's tokens get a gradient, and
// the normalizers (dapo's and bnpo's token counts, grpo's per-row counts)
// count the model's tokens only.
func TestToolTokensMasked(t *testing.T) {
	m, tok, err := model.NewTiny(t.TempDir(), []string{"<call", "call", "</", ">", "<result", "result", "calculator"},
		model.TinyConfig{Hidden: 16, Layers: 1, Heads: 2}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := NewLMPolicy(m, nil, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(s string) []int32 {
		var out []int32
		for _, id := range tok.Tokenizer.Encode(s, false) {
			out = append(out, int32(id))
		}
		return out
	}
	eos := int32(tok.EOS[0])
	turn1 := append(enc("<call>calculator 6*7</call>"), eos)
	ins := enc("<result>42</result>")
	turn2 := append(enc("42"), eos)
	var mask1 []int32
	for _, part := range []struct {
		n int
		v int32
	}{{len(turn1), 1}, {len(ins), 0}, {len(turn2), 1}} {
		for range part.n {
			mask1 = append(mask1, part.v)
		}
	}
	rows := []*row{
		{PromptIDs: enc("Q:6*7="), IDs: slices.Concat(turn1, ins, turn2), ToolMask: mask1, Advantage: 1},
		{PromptIDs: enc("Q:6*7="), IDs: append(enc("41"), eos), Advantage: -1},
	}
	modelTokens := []int{len(turn1) + len(turn2), 3}
	mb := packRows(rows, 2, 0, 64, false)
	C := mb.C
	isTool := func(b, j int) bool { return b == 0 && j >= len(turn1) && j < len(turn1)+len(ins) }
	for b := range 2 {
		for j := range C {
			want := float32(0)
			if j < len(rows[b].IDs) && !isTool(b, j) {
				want = 1
			}
			if mb.LossMask[b*C+j] != want {
				t.Errorf("loss mask row %d column %d = %v, want %v", b, j, mb.LossMask[b*C+j], want)
			}
		}
	}
	if got, want := mb.tokens(), modelTokens[0]+modelTokens[1]; got != want {
		t.Errorf("loss tokens %d, want %d (the model's tokens only)", got, want)
	}

	for _, lt := range []loss.Type{loss.DAPO, loss.BNPO, loss.DrGRPO, loss.GRPO} {
		n := loss.StepNormalizers{Rows: 2, Tokens: mb.tokens(), MicroBatch: 1, MaxCompletionLength: 64}
		mb.setWeights(lt, n)
		for b := range 2 {
			for j := range C {
				w := mb.Weights[b*C+j]
				switch {
				case j >= len(rows[b].IDs) || isTool(b, j):
					if w != 0 {
						t.Errorf("%s: weight of row %d column %d (not a model token) = %v", lt, b, j, w)
					}
				case lt == loss.DAPO || lt == loss.BNPO:
					if want := float32(1) / float32(modelTokens[0]+modelTokens[1]); w != want {
						t.Errorf("%s: weight %v, want 1/%d (model tokens)", lt, w, modelTokens[0]+modelTokens[1])
					}
				case lt == loss.GRPO:
					if want := float32(1) / float32(2*modelTokens[b]); w != want {
						t.Errorf("%s: row %d weight %v, want 1/(2·%d)", lt, b, w, modelTokens[b])
					}
				}
			}
		}
		outs, err := gradExec(t, pol, C, lt).Exec(mb.inputs(false, false)...)
		if err != nil {
			t.Fatal(err)
		}
		gl, ge := tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
		for b := range 2 {
			for j := range len(rows[b].IDs) {
				g, e := gl[b*C+j], ge[b*C+j]
				if isTool(b, j) && (g != 0 || e != 0) {
					t.Errorf("%s: tool token %d has gradient %v (log-prob), %v (entropy); want 0", lt, j, g, e)
				}
				if !isTool(b, j) && (g == 0 || e == 0) {
					t.Errorf("%s: model token %d of row %d has no gradient (%v, %v)", lt, j, b, g, e)
				}
			}
		}
	}
}

// gradExec builds the gradient of the loss of lossType (policy term, KL,
// entropy bonus, weighted as the training graph weighs them) with respect
// to the per-token log-probs and entropies.
func gradExec(t *testing.T, pol *LMPolicy, C int, lt loss.Type) *mlctx.Exec {
	t.Helper()
	exec, err := mlctx.NewExecAny(pol.Backend(), pol.Context(), func(ctx *mlctx.Context, in []*Node) []*Node {
		ctx = ctx.Checked(false)
		logp, entropy := PolicyLogProbs(ctx, pol, in[0], in[1], C, LogProbsOptions{Temperature: 1})
		ref := AddScalar(StopGradient(logp), -0.5) // a reference away from the policy: the KL has a gradient
		terms := loss.TokenLoss(loss.Inputs{LogP: logp, Old: AddScalar(StopGradient(logp), 0.01), Ref: ref, Adv: in[4], Mask: in[2], Entropy: entropy},
			loss.Spec{Type: lossSpecType(lt), Epsilon: 0.2, EpsilonHigh: 0.28, Beta: 0.04})
		l := Sub(loss.WeightedLoss(terms.PerToken, in[3]), MulScalar(loss.EntropyBonus(entropy, in[2], nil, in[microEntScale], lt), 0.01))
		return Gradient(l, logp, entropy)
	})
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

// lossSpecType is the policy term of a loss type, as Config.lossSpec sets it.
func lossSpecType(lt loss.Type) loss.Type {
	cfg := DefaultConfig()
	cfg.LossType = lt
	return cfg.lossSpec().Type
}
