package grpo

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
	"github.com/grpokit/grpokit/internal/adamw"
	"github.com/grpokit/grpokit/loss"
)

// accScope is where gradients are accumulated between micro-batches.
const accScope = "/grpo/acc_grads"

// Indices of the statistics the training graph returns (one vector). Most
// are sums over the micro-batch that the trainer adds up over a step;
// statLowMin and statHighMax are a minimum and a maximum over rows.
const (
	statKL           = iota // Σ m·KL
	statLowClip             // Σ m·low (token level) or Σ rows·low (sequence level)
	statHighClip            // same for high
	statRegionClip          // same for low or high
	statClipCount           // the denominator of the three above: Σ m or rows
	statEntropy             // Σ m·H
	statTokens              // Σ m
	statLowMin              // min over rows of the row's low-clip mean (2 for none)
	statHighMax             // max over rows of the row's high-clip mean (−1 for none)
	statCISPOClip           // Σ m·[w > ε_high and A > 0]
	statPhi                 // Σ rows·φ (vespo)
	statRows                // rows with a token in the loss
	statPolicyLoss          // the loss before the entropy bonus
	statBonusEntropy        // Σ m·e·H over the entropy bonus's tokens (e: the entropy mask)
	statBonusTokens         // Σ m·e
	numStats
)

// grpoOptimizerScope holds the GRPO trainer's optimizer state (moments and
// step count): GoMLX's default, apart from package sft's, so that a warm
// start leaves GRPO's AdamW starting fresh, as TRL's separate trainers do.
const grpoOptimizerScope = optimizers.AdamDefaultScope

// logProbsGraph returns the graph function of the old/reference log-probs:
// inputs tokens, mask, loss mask → logp [B, C].
func (t *Trainer) logProbsGraph(reference bool) func(ctx *mlctx.Context, in []*Node) *Node {
	return func(ctx *mlctx.Context, in []*Node) *Node {
		c := in[2].Shape().Dim(1)
		var allowed []*Node
		if t.constraint != nil {
			allowed = in[3:5]
		}
		group := groupOf(in, 3+len(allowed))
		logp, _ := PolicyLogProbs(ctx.Checked(false), t.policy, in[0], in[1], c, t.logProbsOptions(reference, false, allowed, group))
		return StopGradient(logp)
	}
}

// lossGraph builds the loss of one micro-batch from the training graph's
// inputs (see microBatch.inputs) and returns it with the statistics vector
// and the per-token terms.
func (t *Trainer) lossGraph(ctx *mlctx.Context, in []*Node) (total, stats *Node, terms loss.Terms) {
	tokens, mask, lossMask, weights, adv, entScale := in[0], in[1], in[2], in[3], in[4], in[5]
	c := lossMask.Shape().Dim(1)
	old, ref, allowed, group := t.extraInputs(in[microInputs:])
	logp, entropy := PolicyLogProbs(ctx, t.policy, tokens, mask, c, t.logProbsOptions(false, true, allowed, group))
	spec := t.cfg.lossSpec()
	if spec.EntropyCoef == 0 && !t.cfg.UseAdaptiveEntropy {
		entropy = StopGradient(entropy) // TRL computes entropies with grad only for the bonus
	}
	li := loss.Inputs{LogP: logp, Old: old, Ref: ref, Adv: adv, Mask: lossMask, Entropy: entropy}
	if t.injectEntropyMask != nil {
		li.EntropyMask = t.injectEntropyMask(in)
	}
	terms = loss.TokenLoss(li, spec)
	policyLoss := loss.WeightedLoss(terms.PerToken, weights)
	total = policyLoss
	switch {
	case t.cfg.UseAdaptiveEntropy:
		// The coefficient changes from step to step: trainStep puts it in
		// entScale.
		total = Sub(total, loss.EntropyBonus(entropy, lossMask, terms.EntropyMask, entScale, spec.Type))
	case spec.EntropyCoef != 0:
		total = Sub(total, MulScalar(loss.EntropyBonus(entropy, lossMask, terms.EntropyMask, entScale, spec.Type), spec.EntropyCoef))
	}
	return total, lossStats(terms, entropy, lossMask, policyLoss), terms
}

// lossStats gathers the statistics vector (see statKL) of one micro-batch.
func lossStats(terms loss.Terms, entropy, lossMask, policyLoss *Node) *Node {
	g := lossMask.Graph()
	zero := ScalarZero(g, dtypes.Float32)
	rowTokens := ReduceSum(lossMask, -1) // [B]
	hasRow := ConvertDType(GreaterThan(rowTokens, ZerosLike(rowTokens)), dtypes.Float32)
	rowMask := ExpandAxes(hasRow, -1) // [B, 1]
	masked := func(x *Node) *Node {
		if x == nil {
			return zero
		}
		x = StopGradient(x)
		if x.Shape().Dim(1) == 1 {
			return ReduceAllSum(Mul(x, rowMask))
		}
		return ReduceAllSum(Mul(x, lossMask))
	}
	// rowMean is each row's masked mean of a [B, C] or [B, 1] flag.
	rowMean := func(x *Node) *Node {
		if x.Shape().Dim(1) == 1 {
			return Reshape(x, x.Shape().Dim(0))
		}
		return Div(ReduceSum(Mul(x, lossMask), -1), MaxScalar(rowTokens, 1.0))
	}
	low, high, region, clipCount := zero, zero, zero, zero
	lowMin, highMax := Scalar(g, dtypes.Float32, 2.0), Scalar(g, dtypes.Float32, -1.0)
	if terms.LowClipped != nil {
		r := Max(terms.LowClipped, terms.HighClipped)
		low, high, region = masked(terms.LowClipped), masked(terms.HighClipped), masked(r)
		if terms.LowClipped.Shape().Dim(1) == 1 {
			clipCount = ReduceAllSum(hasRow)
		} else {
			clipCount = ReduceAllSum(lossMask)
		}
		isRow := GreaterThan(hasRow, ZerosLike(hasRow))
		lowMin = ReduceAllMin(Where(isRow, rowMean(terms.LowClipped), AddScalar(ZerosLike(hasRow), 2.0)))
		highMax = ReduceAllMax(Where(isRow, rowMean(terms.HighClipped), AddScalar(ZerosLike(hasRow), -1.0)))
	}
	bonusMask := lossMask
	if terms.EntropyMask != nil {
		bonusMask = Mul(lossMask, StopGradient(terms.EntropyMask))
	}
	return Stack([]*Node{
		masked(terms.KL), low, high, region, clipCount,
		masked(entropy), ReduceAllSum(lossMask), lowMin, highMax,
		masked(terms.CISPOClipped), masked(terms.Phi), ReduceAllSum(hasRow), StopGradient(policyLoss),
		ReduceAllSum(Mul(StopGradient(entropy), bonusMask)), ReduceAllSum(bonusMask),
	}, 0)
}

// extraInputs splits the training graph's optional inputs (see
// microBatch.inputs, withAllowed and withGroup): old and ref log-probs (nil
// when not used), the constraint inputs (nil without a constraint) and the
// rows' prompt group (0 for none).
func (t *Trainer) extraInputs(in []*Node) (old, ref *Node, allowed []*Node, group int) {
	if t.withOld() {
		old, in = in[0], in[1:]
	}
	if t.withRef() {
		ref, in = in[0], in[1:]
	}
	if t.constraint != nil {
		allowed, in = in[:2], in[2:]
	}
	return old, ref, allowed, groupOf(in, 0)
}

// groupOf reads the group marker (microBatch.withGroup), an int8 vector
// after the first n graph inputs: its length, or 0 when there is none.
func groupOf(in []*Node, n int) int {
	if len(in) > n {
		if last := in[len(in)-1]; last.DType() == dtypes.Int8 && last.Rank() == 1 {
			return last.Shape().Dim(0)
		}
	}
	return 0
}

// trainGraph returns the graph function of one micro-batch. With accumulate
// set it adds the micro-batch's gradients to the accumulators (and, when
// applying, uses their sum); when apply is set it clips the gradients by
// global norm and clears the accumulators. Outputs: loss, statistics, and
// (apply only) the gradient norm before clipping, whether the step may be
// taken (see finiteStep) and the clipped gradients, one output per
// variable of adamUpdate.vars: the AdamW step is a separate executable
// that overwrites the weights and moments in place (update.go). When the
// update runs as loops on the host (adamUpdate.clipOnHost), an applying
// graph returns the loss, statistics and the unclipped gradients, and
// clipAndApply does the rest.
func (t *Trainer) trainGraph(accumulate, apply bool) func(ctx *mlctx.Context, in []*Node) []*Node {
	return func(ctx *mlctx.Context, in []*Node) []*Node {
		ctx = ctx.Checked(false)
		g := in[0].Graph()
		ctx.SetTraining(g, true)
		total, stats, _ := t.lossGraph(ctx, in)

		var vars []*mlctx.Variable
		var values []*Node
		for v := range ctx.IterVariables() {
			if v.Trainable && v.InUseByGraph(g) {
				vars = append(vars, v)
				values = append(values, v.ValueGraph(g))
			}
		}
		if len(vars) == 0 {
			panic("grpo: the policy's logits use no trainable variable")
		}
		grads := Gradient(total, values...)
		for i, v := range vars {
			if !accumulate {
				break
			}
			acc := accumulatorVar(ctx, v)
			grads[i] = Add(acc.ValueGraph(g), grads[i])
			if apply {
				acc.SetValueGraph(ZerosLike(grads[i]))
			} else {
				acc.SetValueGraph(grads[i])
			}
		}
		if !apply {
			return []*Node{total, stats}
		}
		t.update.setVars(vars)
		if t.update.clipOnHost = t.update.loopable(); t.update.clipOnHost {
			// The norm, the finite check and the clipping run on the
			// host, inside the AdamW loops (clipAndApply), with the same
			// operations as below.
			return append([]*Node{total, stats}, grads...)
		}

		norm := adamw.NormGraph(grads)
		if t.cfg.MaxGradNorm > 0 {
			// torch.nn.utils.clip_grad_norm_: scale by min(1, max/(norm+1e-6)).
			coef := MinScalar(Div(Scalar(g, dtypes.Float32, t.cfg.MaxGradNorm), AddScalar(norm, 1e-6)), 1.0)
			for i := range grads {
				grads[i] = Mul(grads[i], coef)
			}
		}
		return append([]*Node{total, stats, norm, finiteStep(total, norm)}, grads...)
	}
}

// accumulatorVar returns the gradient accumulator of v (zero at first).
func accumulatorVar(ctx *mlctx.Context, v *mlctx.Variable) *mlctx.Variable {
	return ctx.InAbsPath(accScope+v.Scope()).Checked(false).
		WithInitializer(initializers.Zero).
		VariableWithShape(v.Name(), v.Shape()).
		SetTrainable(false)
}

// lossSpec returns the loss.Spec of c.
func (c Config) lossSpec() loss.Spec {
	return loss.Spec{
		Type: c.LossType, Level: c.ImportanceSamplingLevel,
		Epsilon: c.Epsilon, EpsilonHigh: c.EffectiveEpsilonHigh(), Delta: deref(c.Delta),
		Beta: c.Beta, UseBiasCorrectionKL: c.UseBiasCorrectionKL, EntropyCoef: c.EntropyCoef,
		EntropyQuantile:        1 - c.TopEntropyQuantile,
		OffPolicyMaskThreshold: c.OffPolicyMaskThreshold,
		SAPOTemperaturePos:     c.SAPOTemperaturePos, SAPOTemperatureNeg: c.SAPOTemperatureNeg,
		VESPO: loss.VESPOParams{KPos: c.VESPOKPos, LambdaPos: c.VESPOLambdaPos, KNeg: c.VESPOKNeg, LambdaNeg: c.VESPOLambdaNeg},
	}
}

// deref returns *p, or 0 for nil.
func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
