package grpo

import (
	"context"
	"errors"
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builder
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
)

// SFTPair is one supervised example: a prompt and the completion tokens to
// learn (for example the chat template's assistant turn plus EOS).
type SFTPair struct {
	PromptIDs, CompletionIDs []int32
}

// SFTTrainer warm-starts a Policy with supervised fine-tuning (Train over a
// Dataset, or Step by step): cross-entropy
// on the completion tokens only (prompt tokens are context, not targets),
// with the same AdamW, schedule and gradient clipping as GRPO. Config
// fields used: LearningRate, LRSchedulerType, warmup, WeightDecay, Adam*,
// MaxGradNorm, MaxPromptLength, MaxCompletionLength. Not safe for
// concurrent use.
type SFTTrainer struct {
	cfg    Config
	policy Policy
	opt    gradientOptimizer
	exec   *mlctx.Exec
	step   int
	before map[*mlctx.Variable]bool // the context's variables before the trainer
}

// NewSFTTrainer returns an SFTTrainer for policy.
func NewSFTTrainer(policy Policy, cfg Config) (*SFTTrainer, error) {
	if policy == nil {
		return nil, errors.New("grpo: NewSFTTrainer: nil Policy")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opt, err := newOptimizer(cfg, sftOptimizerScope)
	if err != nil {
		return nil, err
	}
	s := &SFTTrainer{cfg: cfg, policy: policy, opt: opt, before: map[*mlctx.Variable]bool{}}
	for v := range policy.Context().IterVariables() {
		s.before[v] = true
	}
	s.exec, err = mlctx.NewExecAny(policy.Backend(), policy.Context(), s.graph)
	if err != nil {
		return nil, fmt.Errorf("grpo: SFT graph: %w", err)
	}
	s.exec.SetMaxCache(128)
	return s, nil
}

// graph: tokens, mask, loss mask → mean completion-token cross-entropy,
// after one clipped AdamW step.
func (s *SFTTrainer) graph(ctx *mlctx.Context, in []*Node) *Node {
	ctx = ctx.Checked(false)
	g := in[0].Graph()
	ctx.SetTraining(g, true)
	c := in[2].Shape().Dim(1)
	logp, _ := policyLogProbs(ctx, s.policy, in[0], in[1], c, logProbsOptions{temperature: 1})
	loss := Div(Neg(ReduceAllSum(Mul(logp, in[2]))), MaxScalar(ReduceAllSum(in[2]), 1))
	var values []*Node
	for v := range ctx.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) {
			values = append(values, v.ValueGraph(g))
		}
	}
	grads := Gradient(loss, values...)
	if s.cfg.MaxGradNorm > 0 {
		var sq *Node
		for _, gr := range grads {
			if x := ReduceAllSum(Square(gr)); sq == nil {
				sq = x
			} else {
				sq = Add(sq, x)
			}
		}
		coef := MinScalar(Div(Scalar(g, dtypes.Float32, s.cfg.MaxGradNorm), AddScalar(Sqrt(sq), 1e-6)), 1.0)
		for i := range grads {
			grads[i] = Mul(grads[i], coef)
		}
	}
	s.opt.UpdateGraphWithGradients(ctx, grads, dtypes.Float32)
	return loss
}

// Step takes one optimizer step on batch (at most BatchSize pairs are
// expected; every pair needs at least one completion token) at the
// learning rate of step Step() of total, and returns the loss before the
// update.
func (s *SFTTrainer) Step(ctx context.Context, batch []SFTPair, total int) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, context.Cause(ctx)
	}
	if len(batch) == 0 {
		return 0, errors.New("grpo: SFT step: empty batch")
	}
	rows := make([]*row, len(batch))
	for i, p := range batch {
		if len(p.CompletionIDs) == 0 || len(p.PromptIDs) == 0 {
			return 0, fmt.Errorf("grpo: SFT step: pair %d has an empty prompt or completion", i)
		}
		prompt := p.PromptIDs
		if m := s.cfg.MaxPromptLength; m > 0 && len(prompt) > m {
			prompt = prompt[len(prompt)-m:]
		}
		comp := p.CompletionIDs
		if len(comp) > s.cfg.MaxCompletionLength {
			comp = comp[:s.cfg.MaxCompletionLength]
		}
		rows[i] = &row{PromptIDs: prompt, IDs: comp}
	}
	mb := packRows(rows, bucket(len(rows), 0), s.cfg.MaxPromptLength, s.cfg.MaxCompletionLength, false)
	lr := s.cfg.LearningRateAt(s.step, total)
	v := optimizers.LearningRateVar(s.policy.Context(), dtypes.Float32, s.cfg.LearningRate)
	if err := v.SetValue(tensors.FromScalar(float32(lr))); err != nil {
		return 0, fmt.Errorf("grpo: SFT step: %w", err)
	}
	outs, err := s.exec.Exec(mb.logitsInputs()...)
	if err != nil {
		return 0, fmt.Errorf("grpo: SFT step %d: %w", s.step+1, err)
	}
	s.step++
	return float64(tensors.ToScalar[float32](outs[0])), nil
}

// StepCount returns the steps taken.
func (s *SFTTrainer) StepCount() int { return s.step }
