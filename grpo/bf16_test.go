package grpo

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/model"
)

// bf16Step runs the golden llama-tiny GRPO batch (offpolicy variant, bnpo:
// clipping active on both sides) through a model computing in dt and
// returns the loss, the log-probs and the gradients of every LoRA matrix
// for the GRPO loss (nll false) or for the summed completion log-probs
// (nll true).
func bf16Step(t *testing.T, dt dtypes.DType, nll bool) (lossValue float64, logp []float32, grads [][]float32, mask []float32) {
	t.Helper()
	g, ts := loadGoldenGRPO(t, "llama-tiny")
	pol := goldenLoRAPolicy(t, &model.Options{Compute: dt})
	vars := pol.TrainableVariables()
	for _, v := range vars {
		if v.Shape().DType != dtypes.Float32 {
			t.Errorf("trainable %s is %s, want float32 masters", v.Name(), v.Shape().DType)
		}
	}
	rows := goldenRows(g)
	mb := packRowsShape(rows, len(rows), 5, g.MaxCompletionLength, false)
	tokens := 0
	for _, v := range mb.LossMask {
		tokens += int(v)
	}
	spec := loss.Spec{Epsilon: g.Epsilon, EpsilonHigh: g.EpsilonHigh, Beta: g.Beta}
	mb.setWeights(loss.BNPO, loss.StepNormalizers{Rows: len(rows), Tokens: tokens, MicroBatch: 1, MaxCompletionLength: g.MaxCompletionLength})
	exec, err := mlctx.NewExecAny(pol.Backend(), pol.Context(), func(ctx *mlctx.Context, in []*Node) []*Node {
		ctx = ctx.Checked(false)
		c := in[2].Shape().Dim(1)
		logp, _ := PolicyLogProbs(ctx, pol, in[0], in[1], c, LogProbsOptions{Temperature: g.Temperature})
		ref, _ := PolicyLogProbs(ctx, pol, in[0], in[1], c, LogProbsOptions{Temperature: g.Temperature, Reference: true})
		terms := loss.TokenLoss(loss.Inputs{LogP: logp, Old: in[microInputs], Ref: StopGradient(ref), Adv: in[4]}, spec)
		l := loss.WeightedLoss(terms.PerToken, in[3])
		if nll {
			l = ReduceAllSum(Mul(logp, in[3]))
		}
		values := make([]*Node, len(vars))
		for i, v := range vars {
			values[i] = v.ValueGraph(logp.Graph())
		}
		return append([]*Node{logp, l}, Gradient(l, values...)...)
	})
	if err != nil {
		t.Fatal(err)
	}
	in := mb.inputs(false, false)
	old := ts["grpo.offpolicy.old_per_token_logps"]
	in = append(in, tensors.FromFlatDataAndDimensions(old.Data, old.Shape...))
	outs, err := exec.Exec(in...)
	if err != nil {
		t.Fatal(err)
	}
	if d := outs[0].DType(); d != dtypes.Float32 {
		t.Errorf("log-probs are %s, want float32", d)
	}
	for _, o := range outs[2:] {
		grads = append(grads, tensors.MustCopyFlatData[float32](o))
	}
	if !nll {
		if want := g.Loss["offpolicy"]["bnpo"]; dt == dtypes.Float32 && !closeTo(float64(tensors.ToScalar[float32](outs[1])), want, 1e-5, 1e-4) {
			t.Fatalf("f32 loss %g, golden %g", tensors.ToScalar[float32](outs[1]), want)
		}
	}
	return float64(tensors.ToScalar[float32](outs[1])), tensors.MustCopyFlatData[float32](outs[0]), grads, mb.LossMask
}

// gradError returns ‖got − want‖/‖want‖, the cosine between them and
// ‖got‖/‖want‖.
func gradError(got, want []float32) (rel, cos, ratio float64) {
	var d2, g2, w2, gw float64
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		d2 += (g - w) * (g - w)
		g2 += g * g
		w2 += w * w
		gw += g * w
	}
	return math.Sqrt(d2 / w2), gw / math.Sqrt(g2*w2), math.Sqrt(g2 / w2)
}

// TestGRPOStepBF16 runs the golden GRPO step with the model computing in
// bfloat16 (LoRA matrices, log-softmax, loss and gradients stay float32,
// as PEFT + TRL compute with a bf16 model) and compares with the same step
// in float32 (which TestLoRAGradientsGolden matches to TRL).
//
// The tolerances, and why:
//   - loss finite and within 25% of f32 (measured 9.8%): the loss is a
//     sum over 37 tokens of terms weighted by 1/37 and by advantages of
//     both signs, so a log-prob error of rms ≈ 0.09 moves it by ≈ 0.015
//     (first order, one standard deviation), 12% of its value here;
//   - the gradient of the summed completion log-probs (no cancellation
//     between terms) within 25% relative L2 and cosine ≥ 0.97 for every
//     LoRA matrix (measured 5–16%, cosine ≥ 0.99): bf16 keeps 8 significant
//     bits, and on this random tiny model (logits std ≈ 4) its rounding
//     moves logits by ≈ 0.06 on average and single log-probs by up to 0.5
//     nats, as transformers' own bf16 forward does (model's
//     TestGoldenLogitsBF16);
//   - the GRPO loss's gradient is a difference of such terms (advantages
//     sum to zero in each group), so its relative error is that noise
//     amplified by the cancellation (measured 44–95% here, cosine
//     0.56–0.92): the test asks for a finite gradient of the right size
//     (norm within 0.5–2× of f32) and direction (cosine ≥ 0.4).
//
// A broken cast shows up beyond these bounds: a lost gradient through
// ConvertDType gives zeros, a bf16 master or optimizer state fails the
// dtype check.
func TestGRPOStepBF16(t *testing.T) {
	loss16, lp16, grpo16, mask := bf16Step(t, dtypes.BFloat16, false)
	loss32, lp32, grpo32, _ := bf16Step(t, dtypes.Float32, false)
	_, _, nll16, _ := bf16Step(t, dtypes.BFloat16, true)
	_, _, nll32, _ := bf16Step(t, dtypes.Float32, true)
	lpWorst := 0.0
	for j := range lp32 {
		if mask[j] == 1 {
			lpWorst = max(lpWorst, math.Abs(float64(lp16[j]-lp32[j])))
		}
	}
	t.Logf("log-probs max |bf16 − f32| %.3g; loss bf16 %.6g, f32 %.6g", lpWorst, loss16, loss32)
	if math.IsNaN(loss16) || math.IsInf(loss16, 0) || math.Abs(loss16-loss32) > 0.25*math.Abs(loss32) {
		t.Errorf("bf16 loss %.6g, f32 %.6g: want finite and within 25%%", loss16, loss32)
	}
	for i := range nll32 {
		rel, cos, _ := gradError(nll16[i], nll32[i])
		grel, gcos, ratio := gradError(grpo16[i], grpo32[i])
		t.Logf("LoRA matrix %d: log-prob gradient rel %.3g cos %.3f; GRPO gradient rel %.3g cos %.3f norm ratio %.2f", i, rel, cos, grel, gcos, ratio)
		if math.IsNaN(rel) || rel > 0.25 || cos < 0.97 {
			t.Errorf("matrix %d: log-prob gradient rel L2 %.3g (want ≤ 0.25), cosine %.3f (want ≥ 0.97)", i, rel, cos)
		}
		if math.IsNaN(grel) || ratio < 0.5 || ratio > 2 || gcos < 0.4 {
			t.Errorf("matrix %d: GRPO gradient norm ratio %.2f (want 0.5–2), cosine %.3f (want ≥ 0.4)", i, ratio, gcos)
		}
	}
}
