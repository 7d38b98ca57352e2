package grpo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// EvalStrategy names when the trainer evaluates Trainer.EvalDataset
// (HF's eval_strategy).
type EvalStrategy string

// The evaluation strategies: never (the default) or every EvalSteps
// optimizer steps.
const (
	EvalNo     EvalStrategy = "no"
	EvalByStep EvalStrategy = "steps"
)

// evalEvery returns the steps between evaluations; 0 for none.
func (t *Trainer) evalEvery() int {
	if t.cfg.EvalStrategy != EvalByStep {
		return 0
	}
	return cmp.Or(t.cfg.EvalSteps, t.cfg.LoggingSteps)
}

// checkEval reports an evaluation strategy without an eval dataset, as
// HF's Trainer does.
func (t *Trainer) checkEval() error {
	if t.evalEvery() > 0 && t.EvalDataset == nil {
		return errors.New(`grpo: Config.EvalStrategy is "steps" but Trainer.EvalDataset is nil`)
	}
	if t.EvalDataset != nil && t.evalEvery() > 0 && t.EvalDataset.Len() < 1 {
		return errors.New("grpo: Trainer.EvalDataset is empty")
	}
	return nil
}

// evalDue runs the evaluation when this step is a multiple of EvalSteps
// and writes its metrics as a line of their own in metrics.jsonl.
func (t *Trainer) evalDue(ctx context.Context, out *outputs) error {
	n := t.evalEvery()
	if n == 0 || t.EvalDataset == nil || t.step%n != 0 {
		return nil
	}
	m, err := t.Evaluate(ctx)
	if err != nil {
		return err
	}
	if err := out.write(m, nil, false); err != nil {
		return err
	}
	if t.cfg.LoggingSteps > 0 {
		w := t.Progress
		if w == nil {
			w = io.Writer(os.Stderr)
		}
		fmt.Fprintf(w, "eval step %d: eval_reward %.4f ± %.4f (%d examples, %.1fs)\n",
			t.step, m["eval_reward"], m["eval_reward_std"], t.EvalDataset.Len(), m["eval_runtime"])
	}
	if t.OnEval != nil {
		t.OnEval(m)
	}
	return nil
}

// Evaluate completes every example of Trainer.EvalDataset greedily with
// the policy as it is now (see the package function Evaluate), scores them
// with the trainer's rewards and weights, and returns TRL's eval metrics:
// step, eval_reward and eval_reward_std (weighted total),
// eval_rewards/NAME/mean and /std per reward, and eval_runtime (seconds).
// Prompts and completions are cut to Config.MaxPromptLength and
// MaxCompletionLength; BatchSize prompts go to each Generate call.
func (t *Trainer) Evaluate(ctx context.Context) (Metrics, error) {
	if t.EvalDataset == nil || t.EvalDataset.Len() < 1 {
		return nil, errors.New("grpo: Trainer.Evaluate: no EvalDataset")
	}
	start := time.Now()
	opts := EvalOptions{
		MaxCompletionLength: t.cfg.MaxCompletionLength,
		MaxPromptLength:     t.cfg.MaxPromptLength,
		BatchSize:           t.cfg.BatchSize,
	}
	if n := t.cfg.NumGenerationsEval; n > 0 {
		// TRL's eval: n completions of each prompt, sampled as in training
		// (seeded by the step, apart from the rollouts' seeds).
		g := t.generateOptions(t.seed(-1-t.step, 0))
		opts.Generations, opts.Temperature, opts.Seed = n, g.Temperature, g.Seed
		opts.TopP, opts.TopK, opts.MinP, opts.RepetitionPenalty = g.TopP, g.TopK, g.MinP, g.RepetitionPenalty
		opts.BatchSize = max(1, t.cfg.BatchSize/n)
	}
	res, err := Evaluate(ctx, t.policy, t.EvalDataset, t.rewards, opts)
	if err != nil {
		return nil, fmt.Errorf("grpo: eval at step %d: %w", t.step, err)
	}
	m := Metrics{"step": float64(t.step), "eval_reward": res.Reward, "eval_reward_std": res.RewardStd}
	for _, s := range res.Scores.Stats {
		m["eval_rewards/"+s.Name+"/mean"] = s.Mean
		m["eval_rewards/"+s.Name+"/std"] = s.Std
	}
	m["eval_runtime"] = time.Since(start).Seconds()
	return m, nil
}
