package loss

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
)

// Type names the policy term and how per-token losses are reduced to
// the scalar loss. The values and formulas follow TRL 1.16.0's
// GRPOTrainer._compute_loss; LOSSES.md says when to pick which. With
// per-token losses l, completion mask m, B rows and L =
// MaxCompletionLength:
//
//	GRPO, SAPO:         mean over rows of sum_t(l·m) / max(1, sum_t m)
//	BNPO:                   sum(l·m) / max(1, sum(m)), per micro-batch
//	DrGRPO:                 sum(l·m) / (B · L)
//	DAPO, CISPO, VESPO:     sum(l·m) / (completion tokens of the whole generation batch
//	                        × GradientAccumulationSteps / StepsPerGeneration)
//	LUSPO:                  mean over rows of sum_t(l·m)
//
// grpo, bnpo, dr_grpo, dapo and luspo use the clipped surrogate; cispo,
// sapo and vespo have their own policy terms (see TokenLoss).
type Type string

// The loss types. BNPO and DAPO differ only with gradient accumulation or
// StepsPerGeneration > GradientAccumulationSteps: BNPO normalizes each
// micro-batch by its own token count, DAPO by the generation batch's.
const (
	GRPO   Type = "grpo"
	BNPO   Type = "bnpo"
	DrGRPO Type = "dr_grpo"
	DAPO   Type = "dapo"
	CISPO  Type = "cispo"
	SAPO   Type = "sapo"
	LUSPO  Type = "luspo"
	VESPO  Type = "vespo"
)

// Clipped reports whether lt uses the clipped surrogate (and logs TRL's
// clip_ratio metrics).
func (lt Type) Clipped() bool {
	switch lt {
	case GRPO, BNPO, DrGRPO, DAPO, LUSPO, "":
		return true
	}
	return false
}

// GlobalTokens reports whether lt divides by the token count of the whole
// generation batch (TRL's num_items_in_batch) rather than per micro-batch.
func (lt Type) GlobalTokens() bool {
	return lt == DAPO || lt == CISPO || lt == VESPO
}

// ImportanceSamplingLevel names where the importance weight is formed.
type ImportanceSamplingLevel string

// The levels: one weight per token, or one per sequence (GSPO: the exp of
// the mean log-ratio over the completion).
const (
	LevelToken    ImportanceSamplingLevel = "token"
	LevelSequence ImportanceSamplingLevel = "sequence"
)

// Spec holds the loss hyperparameters a graph needs (grpo.Config
// fills it from its settings). Its zero value plus Epsilon is TRL v0.21.0's
// clipped loss without KL.
type Spec struct {
	Type  Type                    // policy term; "" is the clipped surrogate
	Level ImportanceSamplingLevel // "" is LevelToken
	// Epsilon and EpsilonHigh bound the clipped ratio to [1−Epsilon,
	// 1+EpsilonHigh]; for cispo EpsilonHigh is the absolute cap of the ratio.
	Epsilon, EpsilonHigh float64
	Delta                float64 // two-sided clipping: ratio capped at Delta in the unclipped branch; 0 for none
	Beta                 float64 // KL weight; the KL term is built only when > 0
	UseBiasCorrectionKL  bool    // KL × importance weight (DeepSeek-V3.2)
	EntropyCoef          float64 // entropy bonus weight; 0 for none
	// EntropyQuantile is 1 − top_entropy_quantile: tokens whose entropy is
	// below this quantile of the micro-batch's are left out of the policy
	// term. 0 keeps every token.
	EntropyQuantile float64
	// OffPolicyMaskThreshold, when set, drops the policy term of rows with
	// a negative advantage whose mean log(old/π) exceeds it.
	OffPolicyMaskThreshold *float64
	SAPOTemperaturePos     float64 // sapo: τ for A > 0
	SAPOTemperatureNeg     float64 // sapo: τ for A ≤ 0
	VESPO                  VESPOParams
}

// VESPOParams are the gamma-weight parameters of the vespo loss: k and λ
// for non-negative and for negative advantages.
type VESPOParams struct {
	KPos, LambdaPos, KNeg, LambdaNeg float64
}

// Inputs are the per-micro-batch tensors TokenLoss reads.
type Inputs struct {
	LogP *graph.Node // [B, C] policy log-probs; the gradient flows through it
	Old  *graph.Node // [B, C] old log-probs; nil means LogP with its gradient stopped (ratio 1)
	Ref  *graph.Node // [B, C] reference log-probs; nil when Beta is 0
	Adv  *graph.Node // [B] advantages, or [B, C] with token credit (see grpo.TokenCredit)
	// Mask [B, C] is the loss mask (0 or 1); it may be nil only at token
	// level without masks and for loss types other than vespo.
	Mask *graph.Node
	// Entropy [B, C] is needed by the entropy mask and the entropy bonus;
	// it carries gradient when the bonus is on.
	Entropy *graph.Node
	// EntropyMask [B, C], when set, is the high-entropy mask used instead
	// of the one computed from Entropy (a reference mask, where float32
	// rounding splits a tie); nil computes it.
	EntropyMask *graph.Node
}

// Terms are the per-token pieces of the GRPO loss of one micro-batch.
// Shapes are [B, C] except where noted; "row" tensors are [B, 1].
type Terms struct {
	// PerToken is TRL's per_token_loss: policy term × masks + β·KL, always
	// [B, C] (a row-level policy term is broadcast).
	PerToken *graph.Node
	// Ratio is the importance weight before the Delta cap (TRL's coef_1):
	// [B, C] at token level, [B, 1] at sequence level.
	Ratio *graph.Node
	// KL is the k3 estimator exp(ref − logp) − (ref − logp) − 1, times the
	// importance weight with UseBiasCorrectionKL; nil without ref.
	KL *graph.Node
	// LowClipped and HighClipped are 1 where the (Delta-capped) ratio is
	// clipped on that side with an advantage of that sign; shaped as Ratio.
	// Nil unless the loss type uses the clipped surrogate.
	LowClipped, HighClipped *graph.Node
	// CISPOClipped is 1 where cispo's cap binds with A > 0; nil otherwise.
	CISPOClipped *graph.Node
	// EntropyMask is 1 on the kept high-entropy tokens; nil without it.
	EntropyMask *graph.Node
	// OffPolicyMask is 1 on kept rows, [B, 1]; nil without it.
	OffPolicyMask *graph.Node
	// Phi is vespo's gamma weight, [B, 1]; nil for other loss types.
	Phi *graph.Node
}

// TokenLoss builds TRL 1.16's per-token GRPO loss L = p·(off-policy
// mask)·(entropy mask) + β·KL, where the policy term p depends on the loss
// type:
//
//	clipped (grpo, bnpo, dr_grpo, dapo, luspo): p = −min(w'·A, clip(w, 1−ε, 1+ε_high)·A), w' = min(w, δ)
//	cispo:  p = −sg(min(w, ε_high))·A·logp
//	sapo:   p = −(4/τ)·sigmoid(τ·(w − 1))·A
//	vespo:  p = −sg(φ)·A·logp (φ from the sequence log-ratio, see vespoWeights)
//
// with w the token- or sequence-level importance weight. Old, Ref and Adv
// are constants (no gradient flows into them). This is a graph building
// function and panics on error.
func TokenLoss(in Inputs, spec Spec) Terms {
	logp := in.LogP
	old := in.Old
	if old == nil {
		old = logp
	}
	old = StopGradient(old)
	a := StopGradient(in.Adv) // [B, C] with token credit
	if a.Rank() == 1 {
		a = ExpandAxes(a, -1) // [B, 1]
	}
	var mask *Node
	if in.Mask != nil {
		mask = StopGradient(in.Mask)
	}
	logRatio := Sub(logp, old)
	w := importanceWeight(logRatio, mask, spec.Level)

	var t Terms
	t.Ratio = w
	var p *Node
	switch spec.Type {
	case CISPO:
		p = cispoTerm(w, a, logp, spec.EpsilonHigh)
		t.CISPOClipped = ConvertDType(LogicalAnd(GreaterThan(w, constLike(w, spec.EpsilonHigh)), GreaterThan(a, ZerosLike(a))), dtypes.Float32)
	case SAPO:
		p = sapoTerm(w, a, spec.SAPOTemperaturePos, spec.SAPOTemperatureNeg)
	case VESPO:
		t.Phi = vespoWeights(logRatio, mask, a, spec.VESPO)
		p = Neg(Mul(Mul(t.Phi, a), logp))
	default:
		p, t.LowClipped, t.HighClipped = clippedTerm(w, a, spec.Epsilon, spec.EpsilonHigh, spec.Delta)
	}
	if spec.OffPolicyMaskThreshold != nil {
		t.OffPolicyMask = offPolicyMask(logp, old, mask, a, *spec.OffPolicyMaskThreshold)
		p = Mul(p, t.OffPolicyMask)
	}
	switch {
	case in.EntropyMask != nil:
		t.EntropyMask = StopGradient(in.EntropyMask)
	case spec.EntropyQuantile > 0:
		t.EntropyMask = HighEntropyMask(in.Entropy, mask, spec.EntropyQuantile)
	}
	if t.EntropyMask != nil {
		p = Mul(p, t.EntropyMask)
	}
	if p.Shape().Dim(1) != logp.Shape().Dim(1) {
		p = BroadcastToDims(p, logp.Shape().Dimensions...)
	}
	t.PerToken = p
	if in.Ref != nil {
		d := Sub(StopGradient(in.Ref), logp)
		t.KL = Sub(Sub(Exp(d), d), OnesLike(d))
		if spec.UseBiasCorrectionKL {
			t.KL = Mul(t.KL, w) // not stop-gradient, as TRL
		}
		if spec.Beta != 0 {
			t.PerToken = Add(t.PerToken, MulScalar(t.KL, spec.Beta))
		}
	}
	return t
}

// constLike returns a float32 scalar constant in x's graph.
func constLike(x *Node, v float64) *Node { return Scalar(x.Graph(), dtypes.Float32, v) }

// importanceWeight returns exp(logRatio) [B, C] at token level, or the exp
// of each row's masked mean log-ratio [B, 1] at sequence level (GSPO).
func importanceWeight(logRatio, mask *Node, level ImportanceSamplingLevel) *Node {
	if level != LevelSequence {
		return Exp(logRatio)
	}
	n := MaxScalar(ReduceSum(mask, -1), 1.0)
	return Exp(ExpandAxes(Div(ReduceSum(Mul(logRatio, mask), -1), n), -1))
}

// WeightedLoss reduces per-token losses with per-token weights made by
// TokenWeights: Σ perToken·weights, a scalar. This is a graph building
// function and panics on error.
func WeightedLoss(perToken, weights *graph.Node) *graph.Node {
	return ReduceAllSum(Mul(perToken, weights))
}

// EntropyBonus returns the entropy term E that the loss subtracts
// (times EntropyCoef), as TRL 1.16 normalizes it for every loss type: the
// mean entropy over the tokens M = mask × entropy mask, Σ H·M / max(1,
// Σ M), times scale (1/micro-batches per step, see EntropyScale). (TRL
// 1.10 divided by the generation batch's tokens for dapo, cispo and
// vespo.) lossType is unused since TRL 1.16. This is a graph building
// function and panics on error.
func EntropyBonus(entropy, mask, entropyMask, scale *graph.Node, lossType Type) *graph.Node {
	m := StopGradient(mask)
	if entropyMask != nil {
		m = Mul(m, entropyMask)
	}
	sum := Div(ReduceAllSum(Mul(entropy, m)), MaxScalar(ReduceAllSum(m), 1.0))
	return Mul(sum, scale)
}

// EntropyScale returns the scale EntropyBonus multiplies by under
// normalizers n: 1/micro-batches per step, for every loss type.
func EntropyScale(lossType Type, n StepNormalizers) float32 {
	return float32(1 / float64(max(1, n.MicroBatch)))
}

// StepNormalizers are the counts a loss reduction divides by, over one
// optimizer step (all micro-batches of gradient accumulation).
type StepNormalizers struct {
	Rows int // rows (completions) in the step that take part in the loss
	// Tokens is the loss tokens (mask ones) of the whole generation batch:
	// TRL's num_items_in_batch, the dapo/cispo/vespo normalizer.
	Tokens     int
	MicroBatch int // micro-batches in the step
	// MaxCompletionLength is the config value (Dr. GRPO's constant).
	MaxCompletionLength int
	// Columns is the completion length TRL pads to (the longest completion
	// of the generation batch). 0 means the micro-batch's own width.
	Columns int
	// StepShare is GradientAccumulationSteps / StepsPerGeneration: TRL
	// 1.16 multiplies the dapo/cispo/vespo normalizer Tokens by it, so
	// that an optimizer step's loss is its tokens' mean when a generation
	// batch spans several steps. 0 means 1.
	StepShare float64
}

// TokenWeights returns, for one micro-batch with loss mask m (rows × C, 0 or
// 1), the weights w such that Σ w·l is that micro-batch's share of TRL's
// loss for lossType (see Type), so the accumulated loss over a step is
// the loss of the whole step. Rows of padding have an all-zero mask and get
// zero weight.
func TokenWeights(mask [][]float32, lossType Type, n StepNormalizers) [][]float32 {
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
		w[b] = make([]float32, len(row))
		var scale float64
		switch lossType {
		case GRPO, SAPO:
			scale = 1 / (max(1, rowTokens) * float64(max(1, n.Rows)))
		case BNPO:
			scale = 1 / (max(1, microTokens) * float64(max(1, n.MicroBatch)))
		case DrGRPO:
			scale = 1 / float64(max(1, n.Rows)*max(1, n.MaxCompletionLength))
		case LUSPO:
			// TRL 1.16: the masked sum of each row, averaged over rows.
			scale = 1 / float64(max(1, n.Rows))
		case DAPO, CISPO, VESPO:
			share := n.StepShare
			if share <= 0 {
				share = 1
			}
			scale = 1 / (float64(max(1, n.Tokens)) * share)
		}
		for t, v := range row {
			w[b][t] = float32(float64(v) * scale)
		}
	}
	return w
}
