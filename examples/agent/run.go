package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/grpokit/grpokit/agent"
	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/exkit"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/sft"
)

// config is the example's settings.
type config struct {
	exkit.Config
	// Demos is the number of warm-start demonstrations; ToolDemos the
	// fraction of them that call the calculator (the rest answer at once).
	Demos     int     `json:"demos"`
	ToolDemos float64 `json:"tool_demos"`
	// MaxCompletion bounds a whole trajectory's tokens.
	MaxCompletion int `json:"max_completion_length"`
	// MaxToolCalls is the -max-tool-calls flag; in a -config file the
	// trainer's max_tool_calling_iterations wins.
	MaxToolCalls int `json:"-"`
	// ForceFormat restricts each turn of a -model run to a calculator call
	// or a number, for trying a folder with random weights.
	ForceFormat bool `json:"force_format"`
	// WarmStart is the supervised steps on demonstrations before GRPO of a
	// -model run (the tiny model's are SFTSteps); WarmLR their peak
	// learning rate (0: 3e-3 for the tiny model, 1e-4 for a -model run).
	WarmStart int     `json:"warm_start_steps"`
	WarmLR    float64 `json:"warm_start_learning_rate"`
}

func defaults() config {
	return config{Config: exkit.Config{
		Train: "full", LoRARank: 8, Steps: 120, Generations: 8, Prompts: 4, GradientCheckpointing: true,
		LR: 1e-3, Temperature: 1, SFTSteps: 800, Eval: 200,
		Out: filepath.Join("runs", "agent"), Seed: 1,
	}, Demos: 300, ToolDemos: 0.4, MaxCompletion: 48, MaxToolCalls: 2}
}

func parse(cfg *config, args []string) error {
	return exkit.Parse("agent", cfg, &cfg.Config, func(fs *flag.FlagSet) {
		fs.IntVar(&cfg.Demos, "demos", cfg.Demos, "warm-start demonstrations (tiny model)")
		fs.Float64Var(&cfg.ToolDemos, "tool-demos", cfg.ToolDemos, "fraction of the demonstrations that call the calculator")
		fs.IntVar(&cfg.MaxCompletion, "max-completion", cfg.MaxCompletion, "most tokens of a whole trajectory (model and tool tokens)")
		fs.IntVar(&cfg.MaxToolCalls, "max-tool-calls", cfg.MaxToolCalls, "most rounds of tool calls per trajectory (max_tool_calling_iterations)")
		fs.BoolVar(&cfg.ForceFormat, "force-format", cfg.ForceFormat, "with -model: every turn is a calculator call or a number (for random-weight folders)")
		fs.IntVar(&cfg.WarmStart, "warm-start", cfg.WarmStart, "with -model: supervised steps on demonstrations in the model's tool format before GRPO")
		fs.Float64Var(&cfg.WarmLR, "warm-lr", cfg.WarmLR, "peak learning rate of the warm start (0: 3e-3 for the tiny model, 1e-4 with -model)")
	}, args)
}

// tinyModel is the embedded default: 2 layers of width 96, a tokenizer in
// which the call and result tags are single tokens (digits are one token
// each, as in Qwen's pre-tokenizer).
func tinyModel() exkit.Tiny {
	return exkit.Tiny{Words: []string{"<call", "call", "</", ">", "<result", "result", "calculator", "Q"},
		Hidden: 96, Layers: 2, Heads: 4, Intermediate: 192, MaxPositions: 128}
}

func run(ctx context.Context, cfg config) error {
	out := cfg.Output()
	if err := cfg.Validate("agent"); err != nil {
		return err
	}
	if cfg.Demos < 1 || !(cfg.ToolDemos >= 0 && cfg.ToolDemos <= 1) {
		return fmt.Errorf("agent: -demos %d, -tool-demos %g: want ≥ 1 and a fraction in [0, 1]", cfg.Demos, cfg.ToolDemos)
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	start := time.Now()
	s, err := exkit.Load("agent", &cfg.Config, tinyModel())
	if err != nil {
		return err
	}
	defer s.Close()
	var constraint model.Constraint
	if cfg.ForceFormat && !s.Tiny {
		if constraint, err = forcedFormat(s); err != nil {
			return err
		}
	}
	policy, err := s.Policy(&cfg.Config, constraint)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	fmt.Fprintf(out, "agent: model %s (%d parameters, %s training), tokenizer vocabulary %d\n",
		s.Dir, s.Model.NumParams(), cfg.Train, s.Tok.Tokenizer.VocabSize())

	format := agent.Format(nil)
	if s.Tiny {
		format = agent.Plain{}
	}
	tools := grpo.Tools{Tools: []*agent.Tool{agent.Calculator()}, Format: format}
	renderer, err := agent.NewRenderer(s.Tok, agent.RendererOptions{Format: format, Vars: map[string]any{"enable_thinking": cfg.Thinking}})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	tools.Renderer = renderer

	warmSteps, warmLR, warmBatch := cfg.SFTSteps, cfg.WarmLR, 16
	if !s.Tiny {
		warmSteps, warmBatch = cfg.WarmStart, 4
	}
	if warmLR == 0 {
		warmLR = 3e-3
		if !s.Tiny {
			warmLR = 1e-4
		}
	}
	warmStarted := warmSteps > 0 && s.From == ""
	if warmStarted {
		demos := problems(uint64(cfg.Seed), cfg.Demos)
		pairs := make([]sft.Pair, len(demos))
		nTool := 0
		for i, p := range demos {
			tool := float64(i%100) < 100*cfg.ToolDemos
			if tool {
				nTool++
			}
			d, err := p.demonstration(tool, s.Tiny, renderer.Format())
			if err != nil {
				return err
			}
			// The demonstration as the rollout that writes it would
			// hold it: the calculator's result inserted, out of the loss.
			traj, err := renderer.Demonstration(d, tools.Tools)
			if err != nil {
				return fmt.Errorf("agent: %w", err)
			}
			pairs[i] = sft.FromTrajectory(traj)
		}
		fmt.Fprintf(out, "\nwarm start: %d supervised steps on %d demonstrations (%d call the calculator, %d answer at once), batch %d, lr %g\n",
			warmSteps, len(demos), nTool, len(demos)-nTool, warmBatch, warmLR)
		if err := exkit.SFTTokens(ctx, s, policy, pairs, warmSteps, warmBatch, warmLR, cfg.Seed, progress(cfg)); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}

	held := problems(uint64(cfg.Seed)+1000, cfg.Eval)
	forced := constraint != nil
	if forced {
		held = fixedProblems(cfg.Eval)
	}
	greedy, err := agent.NewRunner(agent.ModelGenerator{Model: s.Model, Config: model.GenerateConfig{StopIDs: s.Tok.EOS, PadID: s.Tok.PAD, Constraint: constraint}},
		renderer, agent.Config{NumGenerations: 1, MaxCompletionLength: cfg.MaxCompletion, MaxToolCallingIterations: cfg.MaxToolCalls}, tools.Tools, nil)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	evaluate := func(step int) (report, error) {
		r, err := evaluate(ctx, greedy, held, s.Tiny, step)
		if err != nil {
			return r, fmt.Errorf("agent: evaluate: %w", err)
		}
		fmt.Fprintf(out, "held-out accuracy %.1f%%, tool-call rate %.1f%%, failed calls %.1f%%, %.2f turns per trajectory; e.g. %q\n",
			100*r.Accuracy, 100*r.ToolRate, 100*r.Failures, r.Turns, r.Example)
		return r, exkit.AppendJSONLine(filepath.Join(cfg.Out, "eval.jsonl"), r)
	}

	gc := cfg.GRPO(5)
	gc.MaxCompletionLength = cfg.MaxCompletion
	if gc.MaxToolCallingIterations == 0 {
		gc.MaxToolCallingIterations = cfg.MaxToolCalls
	}
	gc.LRSchedulerType = grpo.ScheduleConstant
	trainer, err := grpo.NewTrainer(policy, gc, reward.Named{Name: "correct", Weight: 1, Scorer: reward.ScorerFunc(func(smp reward.Sample) float64 {
		if correct(smp.Final(), smp.Answer) {
			return 1
		}
		return 0
	})})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	trainer.Progress = out
	// A warm-started run is warned of a collapse of its sampled reward.
	trainer.WarmStarted = warmStarted
	s.Limit(trainer)
	if err := trainer.SetTools(tools); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if err := exkit.Resume(trainer, s.From, out); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	fmt.Fprintf(out, "\nevaluating on %d held-out problems (greedy)\nbefore GRPO: ", len(held))
	before, err := evaluate(trainer.Step())
	if err != nil {
		return err
	}
	train := problems(uint64(cfg.Seed)+1, 4096)
	if forced {
		train = fixedProblems(64)
	}
	data := make(dataset.SliceDataset, len(train))
	for i, p := range train {
		pr := p.prompt(s.Tiny)
		ex := dataset.Example{Prompt: pr.Text, Answer: pr.Meta["answer"], Meta: pr.Meta}
		if !s.Tiny {
			ex.Messages = []dataset.Message{{Role: "user", Content: pr.Messages[0].Content}}
		}
		data[i] = ex
	}
	fmt.Fprintf(out, "\nGRPO on trajectories: %d steps × %d problems × %d samples, lr %g\n", cfg.Steps, cfg.Prompts, cfg.Generations, cfg.LR)
	trainTime, stop, err := exkit.Train(ctx, "agent", &cfg.Config, out, trainer.Step,
		func(ctx context.Context) error { return trainer.Train(ctx, data) },
		func() error { return plot(cfg.Out) })
	if stop || err != nil {
		return err
	}
	fmt.Fprintf(out, "after %d GRPO steps (%s training, %s in all): ", trainer.Step(), trainTime.Round(time.Second), time.Since(start).Round(time.Second))
	after, err := evaluate(trainer.Step())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%-24s %8s %8s\n", "greedy, held-out", "before", "after")
	fmt.Fprintf(out, "%-24s %7.1f%% %7.1f%%\n", "accuracy", 100*before.Accuracy, 100*after.Accuracy)
	fmt.Fprintf(out, "%-24s %7.1f%% %7.1f%%\n", "tool-call rate", 100*before.ToolRate, 100*after.ToolRate)
	fmt.Fprintf(out, "%-24s %8s %8s\n", "accuracy without a call", pct(before.Alone), pct(after.Alone))
	fmt.Fprintf(out, "%-24s %8.2f %8.2f\n", "turns per trajectory", before.Turns, after.Turns)
	fmt.Fprintf(out, "outputs in %s: metrics.jsonl, reward.png, eval.jsonl, checkpoints\n", cfg.Out)
	return nil
}

// forcedFormat is a constraint for -model runs with random weights: each
// turn is the calculator call of 123 × 45, or 5535, or 5536 (the problems
// are then all 123 × 45, see fixedProblems).
func forcedFormat(s *exkit.Setup) (model.Constraint, error) {
	f, err := agent.DetectFormat(s.Tok.Templates["default"].Source())
	if err != nil {
		return nil, fmt.Errorf("agent: -force-format: %w", err)
	}
	call, err := callText(f, "123*45")
	if err != nil {
		return nil, fmt.Errorf("agent: -force-format: %w", err)
	}
	return model.NewTrie([][]int{s.Encode(call), s.Encode("5535"), s.Encode("5536")}, s.Tok.EOS[0]), nil
}

// callText is a call of the calculator on expr as a model writes it in
// format f.
func callText(f agent.Format, expr string) (string, error) {
	switch f.Name() {
	case "plain":
		return "<call>calculator " + expr + "</call>", nil
	case "hermes":
		return "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"" + expr + "\"}}\n</tool_call>", nil
	case "llama3":
		return `{"name": "calculator", "parameters": {"expression": "` + expr + `"}}`, nil
	case "gemma":
		return "```tool_code\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"" + expr + "\"}}\n```", nil
	}
	return "", fmt.Errorf("no calculator call written for format %q", f.Name())
}

// fixedProblems are n copies of the product -force-format's call
// computes, 123 × 45: the forced answers 5535 (right) and 5536 (wrong)
// and the call give rewards that differ within a group.
func fixedProblems(n int) []problem {
	out := make([]problem, n)
	for i := range out {
		out[i] = problem{123, 45}
	}
	return out
}

// pct writes a fraction as a percentage, "–" for NaN (no such trajectory).
func pct(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

func progress(cfg config) io.Writer {
	if cfg.Quiet {
		return nil
	}
	return cfg.Output()
}

// plot draws the reward and the tool metrics per step.
func plot(dir string) error {
	lines, err := exkit.MetricLines(filepath.Join(dir, checkpoint.MetricsFile), 0, "reward", "tools/call_frequency", "tools/failure_frequency")
	if err != nil {
		return err
	}
	return exkit.PlotLines(filepath.Join(dir, "reward.png"), "agent: reward and tool use per GRPO step", "step", "value", lines...)
}
