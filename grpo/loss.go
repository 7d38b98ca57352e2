package grpo

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
)

// TokenLogProbs turns logits into the log-probabilities of the chosen
// tokens and the entropy of each predictive distribution, as TRL's
// selective_log_softmax and entropy_from_logits do after dividing the
// logits by temperature:
//
//	logits [B, C, V], tokens [B, C] (any integer dtype) → logp [B, C], entropy [B, C]
//
// Both outputs are float32. This is a graph building function and panics on
// error.
func TokenLogProbs(logits, tokens *Node, temperature float64) (logp, entropy *Node) {
	if logits.DType() != dtypes.Float32 {
		logits = ConvertDType(logits, dtypes.Float32)
	}
	if temperature != 1 {
		logits = DivScalar(logits, temperature)
	}
	vocab := logits.Shape().Dim(-1)
	logProbs := LogSoftmax(logits, -1)
	// A one-hot mask instead of a gather: its gradient is a plain product,
	// which every backend has.
	oneHot := OneHot(tokens, vocab, dtypes.Float32)
	logp = ReduceSum(Mul(logProbs, oneHot), -1)
	entropy = Neg(ReduceSum(Mul(Exp(logProbs), logProbs), -1))
	return logp, entropy
}

// LossTerms are the per-token pieces of the GRPO loss of one micro-batch,
// all [B, C] float32.
type LossTerms struct {
	// PerToken is the loss of each token before masking (TRL's
	// per_token_loss): −min(r·A, clip(r)·A) + β·KL − EntropyCoef·H.
	PerToken *Node
	// Ratio is exp(logp − old).
	Ratio *Node
	// KL is the k3 estimator exp(ref − logp) − (ref − logp) − 1; nil when
	// ref is nil.
	KL *Node
	// LowClipped and HighClipped are 1 where the ratio is clipped on that
	// side with an advantage of that sign (TRL's clip_ratio metrics).
	LowClipped, HighClipped *Node
}

// LossSpec holds the loss hyperparameters a graph needs.
type LossSpec struct {
	Epsilon, EpsilonHigh float64 // clip bounds: ratio in [1−Epsilon, 1+EpsilonHigh]
	Beta                 float64 // KL weight; the KL term is built only when > 0
	EntropyCoef          float64 // entropy bonus weight; 0 for none
}

// lossSpec returns the LossSpec of c.
func (c Config) lossSpec() LossSpec {
	return LossSpec{Epsilon: c.Epsilon, EpsilonHigh: c.EffectiveEpsilonHigh(), Beta: c.Beta, EntropyCoef: c.EntropyCoef}
}

// TokenLoss builds TRL v0.21.0's per-token GRPO loss
//
//	r = exp(logp − old)
//	l = −min(r·A, clip(r, 1−ε, 1+ε_high)·A) + β·(exp(ref − logp) − (ref − logp) − 1)
//
// from logp, old, ref [B, C] and adv [B]. old and ref are constants (no
// gradient flows into them); ref may be nil when Beta is 0, entropy may be
// nil when EntropyCoef is 0. This is a graph building function and panics on
// error.
func TokenLoss(logp, old, ref, adv, entropy *Node, spec LossSpec) LossTerms {
	old, adv = StopGradient(old), StopGradient(adv)
	a := ExpandAxes(adv, -1) // [B, 1]
	ratio := Exp(Sub(logp, old))
	clipped := ClipScalar(ratio, 1-spec.Epsilon, 1+spec.EpsilonHigh)
	perToken := Neg(Min(Mul(ratio, a), Mul(clipped, a)))

	var kl *Node
	if ref != nil {
		d := Sub(StopGradient(ref), logp)
		kl = Sub(Sub(Exp(d), d), OnesLike(d))
		if spec.Beta != 0 {
			perToken = Add(perToken, MulScalar(kl, spec.Beta))
		}
	}
	if spec.EntropyCoef != 0 && entropy != nil {
		perToken = Sub(perToken, MulScalar(entropy, spec.EntropyCoef))
	}
	zero := ZerosLike(a)
	low := LogicalAnd(LessThan(ratio, Scalar(ratio.Graph(), dtypes.Float32, 1-spec.Epsilon)), LessThan(a, zero))
	high := LogicalAnd(GreaterThan(ratio, Scalar(ratio.Graph(), dtypes.Float32, 1+spec.EpsilonHigh)), GreaterThan(a, zero))
	return LossTerms{
		PerToken:    perToken,
		Ratio:       ratio,
		KL:          kl,
		LowClipped:  ConvertDType(low, dtypes.Float32),
		HighClipped: ConvertDType(high, dtypes.Float32),
	}
}

// WeightedLoss reduces per-token losses with per-token weights made by
// TokenWeights: Σ perToken·weights, a scalar. This is a graph building
// function and panics on error.
func WeightedLoss(perToken, weights *Node) *Node {
	return ReduceAllSum(Mul(perToken, weights))
}

// StepNormalizers are the counts a loss reduction divides by, over one
// optimizer step (all micro-batches of gradient accumulation).
type StepNormalizers struct {
	Rows       int // rows (completions) in the step that take part in the loss
	Tokens     int // loss tokens (mask ones) in the step
	MicroBatch int // micro-batches in the step
	// MaxCompletionLength is the config value (Dr. GRPO's constant).
	MaxCompletionLength int
}

// TokenWeights returns, for one micro-batch with loss mask m (rows × C, 0 or
// 1), the weights w such that Σ w·l is that micro-batch's share of TRL's
// loss for lossType (see LossType), so the accumulated loss over a step is
// the loss of the whole step. Rows of padding have an all-zero mask and get
// zero weight.
func TokenWeights(mask [][]float32, lossType LossType, n StepNormalizers) [][]float32 {
	microTokens := 0.0
	for _, row := range mask {
		for _, v := range row {
			microTokens += float64(v)
		}
	}
	w := make([][]float32, len(mask))
	for b, row := range mask {
		rowTokens := 0.0
		for _, v := range row {
			rowTokens += float64(v)
		}
		var scale float64
		switch lossType {
		case LossGRPO:
			scale = 1 / (max(1, rowTokens) * float64(max(1, n.Rows)))
		case LossBNPO:
			scale = 1 / (max(1, microTokens) * float64(max(1, n.MicroBatch)))
		case LossDrGRPO:
			scale = 1 / float64(max(1, n.Rows)*max(1, n.MaxCompletionLength))
		case LossDAPO:
			scale = 1 / float64(max(1, n.Tokens))
		}
		w[b] = make([]float32, len(row))
		for t, v := range row {
			w[b][t] = float32(float64(v) * scale)
		}
	}
	return w
}
