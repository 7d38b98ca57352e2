package sft

import (
	"context"
	"errors"
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builder
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/adamw"
	"github.com/grpokit/grpokit/internal/optim"
	"github.com/grpokit/grpokit/internal/pad"
)

// Pair is one supervised example: a prompt and the completion tokens to
// learn (for example the chat template's assistant turn plus EOS).
type Pair struct {
	PromptIDs, CompletionIDs []int32
	// Mask, when not nil, has one entry per CompletionIDs token: 1 for a
	// token to learn, 0 for one that is context only (a tool result
	// inside a demonstrated trajectory, as TRL masks tool tokens). nil
	// learns every completion token.
	Mask []int32
}

// Trainer warm-starts a grpo.Policy with supervised fine-tuning (Train
// over a Dataset, or Step by step): cross-entropy on the completion tokens
// only (prompt tokens are context, not targets), with the same AdamW,
// schedule and gradient clipping as GRPO. Not safe for concurrent use.
type Trainer struct {
	cfg    Config
	policy grpo.Policy
	opt    optim.GradientOptimizer
	exec   *mlctx.Exec
	step   int
	before map[*mlctx.Variable]bool // the context's variables before the trainer
}

// New returns a Trainer for policy, with cfg validated.
func New(policy grpo.Policy, cfg Config) (*Trainer, error) {
	if policy == nil {
		return nil, errors.New("sft: New: nil Policy")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opt, err := newOptimizer(cfg)
	if err != nil {
		return nil, err
	}
	s := &Trainer{cfg: cfg, policy: policy, opt: opt, before: map[*mlctx.Variable]bool{}}
	for v := range policy.Context().IterVariables() {
		s.before[v] = true
	}
	s.exec, err = mlctx.NewExecAny(policy.Backend(), policy.Context(), s.graph)
	if err != nil {
		return nil, fmt.Errorf("sft: graph: %w", err)
	}
	s.exec.SetMaxCache(128)
	return s, nil
}

// graph: tokens, mask, loss mask → mean completion-token cross-entropy,
// after one clipped AdamW step.
func (s *Trainer) graph(ctx *mlctx.Context, in []*Node) *Node {
	ctx = ctx.Checked(false)
	g := in[0].Graph()
	ctx.SetTraining(g, true)
	c := in[2].Shape().Dim(1)
	logp, _ := grpo.PolicyLogProbs(ctx, s.policy, in[0], in[1], c, grpo.LogProbsOptions{GradientCheckpointing: s.cfg.GradientCheckpointing})
	loss := Div(Neg(ReduceAllSum(Mul(logp, in[2]))), MaxScalar(ReduceAllSum(in[2]), 1))
	var values []*Node
	for v := range ctx.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) {
			values = append(values, v.ValueGraph(g))
		}
	}
	grads := Gradient(loss, values...)
	if s.cfg.MaxGradNorm > 0 {
		norm := adamw.NormGraph(grads)
		coef := MinScalar(Div(Scalar(g, dtypes.Float32, s.cfg.MaxGradNorm), AddScalar(norm, 1e-6)), 1.0)
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
func (s *Trainer) Step(ctx context.Context, batch []Pair, total int) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, context.Cause(ctx)
	}
	if len(batch) == 0 {
		return 0, errors.New("sft: step: empty batch")
	}
	in, err := pack(batch, s.cfg.MaxPromptLength, s.cfg.MaxCompletionLength)
	if err != nil {
		return 0, err
	}
	lr := s.cfg.LearningRateAt(s.step, total)
	v := optimizers.LearningRateVar(s.policy.Context(), dtypes.Float32, s.cfg.LearningRate)
	if err := v.SetValue(tensors.FromScalar(float32(lr))); err != nil {
		return 0, fmt.Errorf("sft: step: %w", err)
	}
	outs, err := s.exec.Exec(in...)
	if err != nil {
		return 0, fmt.Errorf("sft: step %d: %w", s.step+1, err)
	}
	s.step++
	return float64(tensors.ToScalar[float32](outs[0])), nil
}

// StepCount returns the steps taken.
func (s *Trainer) StepCount() int { return s.step }

// Scope of the SFT optimizer state (moments and step count): apart from
// GRPO's, so that a warm start leaves GRPO's AdamW starting fresh, as TRL's
// separate trainers do.
const optimizerScope = "SFTAdamOptimizer"

// newOptimizer returns AdamW configured from c. The learning rate it starts
// with is replaced every step by the schedule.
func newOptimizer(c Config) (optim.GradientOptimizer, error) {
	opt, err := optim.NewAdamW(optimizerScope, optim.AdamWConfig{
		LearningRate: c.LearningRate, Beta1: c.AdamBeta1, Beta2: c.AdamBeta2,
		Epsilon: c.AdamEpsilon, WeightDecay: c.WeightDecay,
	})
	if err != nil {
		return nil, fmt.Errorf("sft: %w", err)
	}
	return opt, nil
}

// pack lays batch out as the graph's inputs: tokens and mask [B, P+C] and
// the loss mask [B, C], prompts left-padded and completions right-padded
// to bucketed lengths (so that a few graph shapes serve every step), B
// the batch size rounded up the same way (padding rows have zero masks).
// Prompts keep their last maxPrompt tokens (0: all), completions their
// first maxCompletion.
func pack(batch []Pair, maxPrompt, maxCompletion int) ([]any, error) {
	if len(batch) == 0 {
		return nil, errors.New("sft: step: empty batch")
	}
	prompts, comps := make([][]int32, len(batch)), make([][]int32, len(batch))
	p, c := 1, 1
	for i, pr := range batch {
		if len(pr.CompletionIDs) == 0 || len(pr.PromptIDs) == 0 {
			return nil, fmt.Errorf("sft: step: pair %d has an empty prompt or completion", i)
		}
		if pr.Mask != nil && len(pr.Mask) != len(pr.CompletionIDs) {
			return nil, fmt.Errorf("sft: step: pair %d has %d mask entries for %d completion tokens", i, len(pr.Mask), len(pr.CompletionIDs))
		}
		prompts[i], comps[i] = pr.PromptIDs, pr.CompletionIDs
		if maxPrompt > 0 && len(prompts[i]) > maxPrompt {
			prompts[i] = prompts[i][len(prompts[i])-maxPrompt:]
		}
		if len(comps[i]) > maxCompletion {
			comps[i] = comps[i][:maxCompletion]
		}
		p, c = max(p, len(prompts[i])), max(c, len(comps[i]))
	}
	b, p, c := bucket(len(batch), 0), bucket(p, maxPrompt), bucket(c, maxCompletion)
	l := p + c
	tokens, mask, lossMask := make([]int32, b*l), make([]int32, b*l), make([]float32, b*c)
	for i := range batch {
		off := i*l + p - len(prompts[i])
		copy(tokens[off:], prompts[i])
		for j := range prompts[i] {
			mask[off+j] = 1
		}
		copy(tokens[i*l+p:], comps[i])
		for j := range comps[i] {
			mask[i*l+p+j] = 1
			lossMask[i*c+j] = 1
			if batch[i].Mask != nil && batch[i].Mask[j] == 0 {
				lossMask[i*c+j] = 0
			}
		}
	}
	return []any{
		tensors.FromFlatDataAndDimensions(tokens, b, l),
		tensors.FromFlatDataAndDimensions(mask, b, l),
		tensors.FromFlatDataAndDimensions(lossMask, b, c),
	}, nil
}

// bucket rounds a length up to its graph shape (pad.Bucket).
func bucket(n, limit int) int { return pad.Bucket(n, limit) }
