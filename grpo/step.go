package grpo

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
)

// accScope is where gradients are accumulated between micro-batches.
const accScope = "/grpo/acc_grads"

// Indices of the statistics the training graph returns (one vector).
const (
	statKL = iota
	statLowClip
	statHighClip
	statRegionClip
	statEntropy
	statTokens
	numStats
)

// gradientOptimizer is the part of GoMLX's Adam the trainer uses: an update
// from gradients it computed (and clipped) itself.
type gradientOptimizer interface {
	UpdateGraphWithGradients(ctx *mlctx.Context, grads []*Node, lossDType dtypes.DType)
}

// Scopes of the optimizer state (moments and step count) of the GRPO
// Trainer and of the SFTTrainer: apart, so that a warm start leaves GRPO's
// AdamW starting fresh, as TRL's separate trainers do.
const (
	grpoOptimizerScope = optimizers.AdamDefaultScope
	sftOptimizerScope  = "SFTAdamOptimizer"
)

// newOptimizer returns AdamW configured from c, keeping its state under
// scope. The learning rate it starts with is replaced every step by the
// schedule (see Trainer.setLearningRate).
func newOptimizer(c Config, scope string) (gradientOptimizer, error) {
	opt := optimizers.Adam().
		Scope(scope).
		LearningRate(c.LearningRate).
		Betas(c.AdamBeta1, c.AdamBeta2).
		Epsilon(c.AdamEpsilon).
		WeightDecay(c.WeightDecay).
		Done()
	g, ok := opt.(gradientOptimizer)
	if !ok {
		return nil, fmt.Errorf("grpo: GoMLX's Adam (%T) cannot take gradients directly", opt)
	}
	return g, nil
}

// policyLogProbs builds the policy's (or reference's) per-token
// log-probabilities and entropies of the completion tokens of tokens
// [B, P+C], with C = completionLen. allowed, when not nil, holds the
// constraint inputs (ids, any) of MaskLogits.
func policyLogProbs(ctx *mlctx.Context, p Policy, tokens, mask *Node, completionLen int, temperature float64, reference bool, allowed []*Node) (logp, entropy *Node) {
	l := tokens.Shape().Dim(1)
	promptLen := l - completionLen
	logits := p.Logits(ctx, LogitsInputs{Tokens: tokens, Mask: mask, PromptLen: promptLen, Reference: reference})
	if allowed != nil {
		logits = MaskLogits(logits, allowed[0], allowed[1])
	}
	targets := Slice(tokens, AxisRange(), AxisRange(promptLen, l))
	return TokenLogProbs(logits, targets, temperature)
}

// logProbsGraph returns the graph function of the old/reference log-probs:
// inputs tokens, mask, loss mask → logp [B, C].
func (t *Trainer) logProbsGraph(reference bool) func(ctx *mlctx.Context, in []*Node) *Node {
	return func(ctx *mlctx.Context, in []*Node) *Node {
		c := in[2].Shape().Dim(1)
		var allowed []*Node
		if t.constraint != nil {
			allowed = in[3:5]
		}
		logp, _ := policyLogProbs(ctx.Checked(false), t.policy, in[0], in[1], c, t.cfg.Temperature, reference, allowed)
		return StopGradient(logp)
	}
}

// lossGraph builds the loss of one micro-batch from the training graph's
// inputs (see microBatch.inputs) and returns it with the statistics vector.
func (t *Trainer) lossGraph(ctx *mlctx.Context, in []*Node) (loss, stats *Node) {
	tokens, mask, lossMask, weights, adv := in[0], in[1], in[2], in[3], in[4]
	next := 5
	c := lossMask.Shape().Dim(1)
	old, ref, allowed := t.extraInputs(in[next:])
	logp, entropy := policyLogProbs(ctx, t.policy, tokens, mask, c, t.cfg.Temperature, false, allowed)
	if old == nil {
		old = StopGradient(logp) // num_iterations = 1: the ratio is exactly 1
	}
	terms := TokenLoss(logp, old, ref, adv, entropy, t.cfg.lossSpec())
	loss = WeightedLoss(terms.PerToken, weights)

	masked := func(x *Node) *Node {
		if x == nil {
			return ScalarZero(lossMask.Graph(), dtypes.Float32)
		}
		return ReduceAllSum(Mul(StopGradient(x), lossMask))
	}
	region := Max(terms.LowClipped, terms.HighClipped)
	stats = Stack([]*Node{
		masked(terms.KL), masked(terms.LowClipped), masked(terms.HighClipped),
		masked(region), masked(entropy), ReduceAllSum(lossMask),
	}, 0)
	return loss, stats
}

// extraInputs splits the training graph's optional inputs (see
// microBatch.inputs and withAllowed): old and ref log-probs (nil when not
// used) and the constraint inputs (nil without a constraint).
func (t *Trainer) extraInputs(in []*Node) (old, ref *Node, allowed []*Node) {
	if t.withOld() {
		old, in = in[0], in[1:]
	}
	if t.withRef() {
		ref, in = in[0], in[1:]
	}
	if t.constraint != nil {
		allowed = in[:2]
	}
	return old, ref, allowed
}

// trainGraph returns the graph function of one micro-batch. With accumulate
// set it adds the micro-batch's gradients to the accumulators (and, when
// applying, uses their sum); when apply is set it clips the gradients by
// global norm, takes the AdamW step and clears the accumulators. Outputs:
// loss, statistics, and (apply only) the gradient norm before clipping.
func (t *Trainer) trainGraph(accumulate, apply bool) func(ctx *mlctx.Context, in []*Node) []*Node {
	return func(ctx *mlctx.Context, in []*Node) []*Node {
		ctx = ctx.Checked(false)
		g := in[0].Graph()
		ctx.SetTraining(g, true)
		loss, stats := t.lossGraph(ctx, in)

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
		grads := Gradient(loss, values...)
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
			return []*Node{loss, stats}
		}

		var sq *Node
		for _, gr := range grads {
			s := ReduceAllSum(Square(gr))
			if sq == nil {
				sq = s
			} else {
				sq = Add(sq, s)
			}
		}
		norm := Sqrt(sq)
		if t.cfg.MaxGradNorm > 0 {
			// torch.nn.utils.clip_grad_norm_: scale by min(1, max/(norm+1e-6)).
			coef := MinScalar(Div(Scalar(g, dtypes.Float32, t.cfg.MaxGradNorm), AddScalar(norm, 1e-6)), 1.0)
			for i := range grads {
				grads[i] = Mul(grads[i], coef)
			}
		}
		t.opt.UpdateGraphWithGradients(ctx, grads, dtypes.Float32)
		return []*Node{loss, stats, norm}
	}
}

// accumulatorVar returns the gradient accumulator of v (zero at first).
func accumulatorVar(ctx *mlctx.Context, v *mlctx.Variable) *mlctx.Variable {
	return ctx.InAbsPath(accScope+v.Scope()).Checked(false).
		WithInitializer(initializers.Zero).
		VariableWithShape(v.Name(), v.Shape()).
		SetTrainable(false)
}
