package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/memplan"
)

// evalCmd is "grpokit eval": the greedy rewards of a model on a run
// config's eval examples (the trained model of -model/-adapter, default
// the config's own model).
func evalCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	configPath := fs.String("config", "", "the run config (dataset, rewards, constraint, eval sections)")
	modelDir := fs.String("model", "", "model folder to evaluate (default: the config's model)")
	adapterDir := fs.String("adapter", "", "LoRA adapter folder applied to -model")
	n := fs.Int("n", 0, "examples evaluated (default: the config's eval.n, else 100)")
	show := fs.Int("show", 3, "completions printed")
	quantize := fs.String("quantize", "", quantizeFlag+" (with -model)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c, err := loadRunConfig(*configPath)
	if err != nil {
		return err
	}
	if *quantize != "" && *modelDir == "" {
		return usageError{errors.New("grpokit eval: -quantize applies to -model (the config's model takes load_in_4bit/load_in_8bit)")}
	}
	if *n < 0 || *show < 0 {
		return usageError{fmt.Errorf("grpokit eval: -n %d -show %d: want ≥ 0", *n, *show)}
	}
	// The config's eval.n decides which rows of dataset.path are held
	// out from training (see loadData); -n takes at most that many of them.
	if *n > 0 {
		c.evalLimit = *n
	} else if c.Eval.N == 0 {
		c.evalLimit = 100
	}
	var s *setup
	if *modelDir != "" {
		c.Model.Tiny, c.Model.Path = nil, folder(*modelDir)
		c.Model.UsePEFT = false
		s = &setup{}
		var note string
		if s.train, s.eval, note, err = loadData(&c); err != nil {
			return err
		}
		if note != "" {
			fmt.Fprintln(out, note)
		}
		if s.rewards, err = buildRewards(withChatVars(c.Rewards, c.ChatTemplateKwargs)); err != nil {
			return err
		}
		opts, err := inference(*quantize)
		if err != nil {
			return err
		}
		if s.loaded, err = loadModel(*modelDir, *adapterDir, opts, os.Stderr); err != nil {
			return err
		}
		s.loaded.chatVars, s.loaded.templatePlain = c.ChatTemplateKwargs, c.TemplatePlainPrompts
		if s.policy, err = s.loaded.policy(true); err != nil {
			return err
		}
	} else {
		// The config's own model, untrained (a tiny one is built afresh, in
		// a folder of its own: not the run's output_dir, nor one shared
		// with another eval).
		tmp, err := os.MkdirTemp("", "grpokit-eval-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		c.OutputDir = tmp
		if s, err = prepare(&c, false, out); err != nil {
			return err
		}
	}
	budget, err := memplan.BudgetFromEnv()
	if err != nil {
		return err
	}
	res, err := grpo.Evaluate(ctx, s.policy, s.eval, s.rewards, grpo.EvalOptions{
		MaxCompletionLength: max(c.Eval.MaxCompletionLength, c.MaxCompletionLength), MaxPromptLength: c.MaxPromptLength,
		Memory: &budget, GCLimit: true, Logger: newLogger()})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "eval (greedy, %d examples): reward %.3f\n", len(res.Completions), res.Reward)
	for _, st := range res.Scores.Stats {
		fmt.Fprintf(out, "  %-20s mean %.3f  std %.3f\n", st.Name, st.Mean, st.Std)
	}
	for i := range min(*show, len(res.Completions)) {
		fmt.Fprintf(out, "--- %q → %q (answer %q)\n", s.eval[i].Text(), res.Completions[i], s.eval[i].Answer)
	}
	return nil
}
