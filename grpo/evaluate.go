package grpo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
)

// EvalOptions configure Evaluate. The zero value means greedy decoding of
// up to 64 tokens, 16 prompts per Generate call.
type EvalOptions struct {
	// MaxCompletionLength is the most tokens generated per answer; default 64.
	MaxCompletionLength int
	// MaxPromptLength keeps the last tokens of longer prompts; 0 means no limit.
	MaxPromptLength int
	// BatchSize is the prompts per Generate call; default 16.
	BatchSize int
	// Sampling picks each token; the zero value (Temperature 0) decodes
	// greedily, above 0 it samples, seeded by Seed.
	model.Sampling
	// Seed seeds sampling when Temperature > 0.
	Seed uint64
	// Generations is the completions made of each example; default 1.
	// EvalResult.Completions then holds an example's completions together.
	Generations int
	// Memory, when not nil, is the budget the evaluation's memory plan
	// (generation alone, BatchSize × Generations rows at a time, for a
	// Policy that is a MemoryPlanner) is checked against before the first
	// batch: Evaluate returns a *memplan.OutOfMemoryError when the plan's
	// peak exceeds it. A Budget with Off set skips the check. nil makes
	// no plan.
	Memory *memplan.Budget
	// GCLimit, with Memory, gives Go's garbage collector the plan's peak
	// as its memory limit while Evaluate runs (memplan.LimitGC, raised if
	// the evaluation needs more) and restores the previous limit after.
	// Without a limit every decode step's garbage lets the heap grow far
	// past what it holds. The limit is process-wide, so it is off by
	// default; GOMEMLIMIT or a limit the program set (a Trainer's) wins.
	GCLimit bool
	// Logger receives the memory limit set; nil means slog.Default().
	Logger *slog.Logger
}

// EvalResult is the outcome of Evaluate.
type EvalResult struct {
	// Completions[i] is the completion of example i.
	Completions []string
	// Scores is the reward evaluation of those completions (per-reward
	// scores, weighted totals and per-reward Stats, in the order given).
	Scores *reward.Result
	// Reward is the mean weighted total over the completions some reward
	// applied to (as TRL, which leaves out a completion every reward
	// returned None for); NaN when none applied to any.
	Reward float64
	// RewardStd is the standard deviation (N−1) of those totals; NaN for
	// fewer than two.
	RewardStd float64
}

// Mean returns the mean of the named reward, and false when there is no
// reward of that name.
func (r *EvalResult) Mean(name string) (float64, bool) {
	for _, s := range r.Scores.Stats {
		if s.Name == name {
			return s.Mean, true
		}
	}
	return 0, false
}

// Evaluate completes every example of data (once greedily unless
// opts.Temperature > 0; opts.Generations times) and scores the completions with rewards, as the
// trainer would score them: a held-out evaluation. Reward failures score 0
// (see reward.Evaluator). It returns context.Cause(ctx) when ctx ends.
func Evaluate(ctx context.Context, p Policy, data dataset.Dataset, rewards []reward.Named, opts EvalOptions) (*EvalResult, error) {
	if p == nil || data == nil {
		return nil, errors.New("grpo: Evaluate: nil Policy or Dataset")
	}
	if err := checkRewardNames(rewards); err != nil {
		return nil, fmt.Errorf("grpo: Evaluate: %w", err)
	}
	gen := GenerateOptions{
		MaxPromptLength:     opts.MaxPromptLength,
		MaxCompletionLength: cmp.Or(opts.MaxCompletionLength, 64),
		Sampling:            opts.Sampling,
		Seed:                opts.Seed,
	}
	g := cmp.Or(opts.Generations, 1)
	if g < 1 {
		return nil, fmt.Errorf("grpo: Evaluate: Generations %d: want ≥ 1", g)
	}
	batch := cmp.Or(opts.BatchSize, 16)
	limit, err := planEvalMemory(p, data, batch*g, gen.MaxCompletionLength, opts)
	if err != nil {
		return nil, fmt.Errorf("grpo: Evaluate: %w", err)
	}
	defer limit.Restore()
	n := data.Len()
	res := &EvalResult{Completions: make([]string, 0, n)}
	samples := make([]reward.Sample, 0, n)
	for start := 0; start < n; start += batch {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		exs := make([]dataset.Example, 0, batch)
		for i := start; i < min(start+batch, n); i++ {
			ex, err := data.Example(i)
			if err != nil {
				return nil, fmt.Errorf("grpo: Evaluate: example %d: %w", i, err)
			}
			exs = append(exs, ex)
		}
		comps, err := p.Generate(ctx, exs, g, gen)
		if err != nil {
			return nil, fmt.Errorf("grpo: Evaluate: %w", err)
		}
		if len(comps) != len(exs)*g {
			return nil, fmt.Errorf("grpo: Evaluate: generate returned %d completions for %d prompts × %d", len(comps), len(exs), g)
		}
		for i, c := range comps {
			ex := exs[i/g]
			res.Completions = append(res.Completions, c.Text)
			samples = append(samples, reward.Sample{Prompt: ex.Text(), Completion: c.Text, Answer: ex.Answer, Meta: ex.Meta, CompletionIDs: c.IDs,
				Messages: rewardMessages(ex.Messages)})
		}
	}
	ev := &reward.Evaluator{Rewards: rewards}
	scores, err := ev.Evaluate(ctx, samples)
	if err != nil {
		return nil, fmt.Errorf("grpo: Evaluate: %w", err)
	}
	res.Scores = scores
	totals := make([]float64, len(scores.Totals))
	sample := make([]float64, len(scores.Scores)) // sample i's score of each reward
	for i, t := range scores.Totals {
		for r := range scores.Scores {
			sample[r] = scores.Scores[r][i]
		}
		totals[i] = t
		if unscored(sample) {
			totals[i] = math.NaN()
		}
	}
	res.Reward, res.RewardStd = loss.NanMeanStd(totals)
	return res, nil
}

// checkRewardNames reports empty and duplicate reward names, which would
// collide in the metrics.
func checkRewardNames(rewards []reward.Named) error {
	var errs []error
	seen := map[string]int{}
	for i, r := range rewards {
		if r.Name == "" {
			errs = append(errs, fmt.Errorf("reward %d has no name", i))
		} else if j, dup := seen[r.Name]; dup {
			errs = append(errs, fmt.Errorf("rewards %d and %d are both named %q (metrics are keyed by name)", j, i, r.Name))
		} else {
			seen[r.Name] = i
		}
	}
	return errors.Join(errs...)
}

// promptEncoder is what planEvalMemory needs to find the longest prompt
// (LMPolicy has it).
type promptEncoder interface {
	PromptIDs(ex dataset.Example, maxLen int) ([]int, error)
}

// planEvalMemory makes the memory plan of evaluating data with p, rows
// sequences of up to maxNew new tokens at a time (memplan.GenerateOnly),
// checks it against opts.Memory and with opts.GCLimit sets it as Go's
// memory limit. Without opts.Memory, or for a Policy that cannot describe
// its memory, it plans nothing (nil, nil).
func planEvalMemory(p Policy, data dataset.Dataset, rows, maxNew int, opts EvalOptions) (*memplan.GCLimit, error) {
	mp, ok := p.(MemoryPlanner)
	if opts.Memory == nil || !ok {
		return nil, nil
	}
	longest := 0
	if enc, ok := p.(promptEncoder); ok {
		for i := range data.Len() {
			ex, err := data.Example(i)
			if err != nil {
				return nil, fmt.Errorf("example %d: %w", i, err)
			}
			ids, err := enc.PromptIDs(ex, opts.MaxPromptLength)
			if err != nil {
				return nil, fmt.Errorf("example %d: %w", i, err)
			}
			longest = max(longest, len(ids))
		}
	}
	req := mp.MemoryRequest(Config{}, longest)
	req.Train = memplan.Training{BatchSize: rows, MaxPromptLength: opts.MaxPromptLength, MaxCompletionLength: maxNew, Phases: memplan.GenerateOnly}
	logger := cmp.Or(opts.Logger, slog.Default())
	plan, err := memplan.Estimate(req)
	if err != nil {
		logger.Warn("grpo: Evaluate: no memory plan for this model; evaluating without the check", "err", err)
		return nil, nil
	}
	return memplan.Enforce(nil, logger, plan, *opts.Memory, opts.GCLimit)
}
