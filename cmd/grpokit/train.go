package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/grpokit/grpokit/agent"
	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/internal/interrupt"
	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/plot"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/sft"
)

// trainCmd is "grpokit train": GRPO from a config file.
func trainCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	configPath := fs.String("config", "", "YAML or JSON run config (TRL's GRPOConfig names plus model, dataset, rewards sections)")
	resume := fs.Bool("resume", false, "continue from the newest checkpoint in output_dir")
	maxSteps := fs.Int("max-steps", 0, "override max_steps (0: num_train_epochs passes over the dataset)")
	outDir := fs.String("out", "", "override output_dir")
	quiet := fs.Bool("quiet", false, "no progress lines")
	adopt := fs.Bool("adopt", false, "with -resume: continue output_dir's newest checkpoint even when it is of another run than the folder's other checkpoints")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c, err := loadRunConfig(*configPath)
	if err != nil {
		return err
	}
	c.Resume = c.Resume || *resume
	c.adopt = *adopt
	if flagSet(fs, "max-steps") {
		if *maxSteps < 0 {
			return usageError{fmt.Errorf("grpokit train: -max-steps %d: want ≥ 0 (0 trains num_train_epochs passes over the dataset)", *maxSteps)}
		}
		c.MaxSteps = *maxSteps
	}
	if *outDir != "" {
		c.OutputDir = *outDir
	}
	if *quiet {
		c.LoggingSteps = 0
	}
	return train(ctx, c, out)
}

// setup is what train and eval share: data, model, policy and rewards.
type setup struct {
	train, eval dataset.SliceDataset
	loaded      *loaded
	policy      *grpo.LMPolicy
	rewards     []reward.Named
	tiny        bool
}

// trainingForm says what trains and how the weights are held and computed:
// "LoRA r=8, base held as nf4 (double quant), compute float32".
func trainingForm(c modelSection, m *model.Model) string {
	form := "full fine-tuning"
	if c.UsePEFT {
		form = fmt.Sprintf("LoRA r=%d, base held as %s", c.LoraR, m.Storage())
		if c.LoadIn4bit && c.UseBnBNestedQuant {
			form += " (double quant)"
		}
	}
	return fmt.Sprintf("%s, compute %s", form, strings.ToLower(m.Compute().String()))
}

// prepare loads the data and the model of c and builds the policy. When
// resuming, a tiny model must be the one the run built (model.ResumeTiny),
// and its initial-model folder stays as it is.
func prepare(c *runConfig, resuming bool, out io.Writer) (*setup, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	for _, n := range c.notes {
		fmt.Fprintf(out, "grpokit: config: %s\n", n)
	}
	if c.Backend != "" {
		if err := os.Setenv("GOMLX_BACKEND", c.Backend); err != nil {
			return nil, err
		}
	}
	s := &setup{}
	var err error
	var note string
	if s.train, s.eval, note, err = loadData(c); err != nil {
		return nil, err
	}
	if note != "" {
		fmt.Fprintln(out, note)
	}
	if s.rewards, err = buildRewards(withChatVars(c.Rewards, c.ChatTemplateKwargs)); err != nil {
		return nil, err
	}
	if t := c.Model.Tiny; t != nil {
		words := tinyWords(c, s.train)
		dir := filepath.Join(c.OutputDir, "initial-model")
		build := model.NewTiny
		if resuming {
			build = model.ResumeTiny
		}
		opts, err := c.Model.options("float32")
		if err != nil {
			return nil, err
		}
		m, tok, err := build(dir, words, t.config(), uint64(c.Seed), opts)
		if err != nil {
			return nil, err
		}
		s.loaded, s.tiny = &loaded{model: m, tok: tok}, true
	} else {
		cfg, err := baseConfig(c.Model.Path)
		if err != nil {
			return nil, err
		}
		opts, err := c.Model.options(cfg.TorchDType)
		if err != nil {
			return nil, err
		}
		m, tok, err := loadBase(c.Model.Path, opts)
		if err != nil {
			return nil, err
		}
		s.loaded = &loaded{model: m, tok: tok}
	}
	if c.Model.UsePEFT {
		r := c.Model.LoraR
		s.loaded.adapter, err = lora.Attach(s.loaded.model, lora.Config{R: r, Alpha: cmp.Or(c.Model.LoraAlpha, float64(2*r)),
			Dropout: c.Model.LoraDropout, TargetModules: c.Model.LoraTargetModules, RSLoRA: c.Model.UseRSLoRA, Seed: uint64(c.Seed)})
		if err != nil {
			return nil, err
		}
	}
	if c.Constraint != nil {
		if s.loaded.constraint, err = choicesTrie(s.loaded.tok, c.Constraint.Choices); err != nil {
			return nil, err
		}
	}
	s.loaded.chatVars, s.loaded.templatePlain = c.ChatTemplateKwargs, c.TemplatePlainPrompts
	s.loaded.plainPrompts = !c.TemplatePlainPrompts && allPlain(s.train)
	if w := plainPromptsWarning(c, s.train, s.eval); w != "" {
		fmt.Fprintln(out, w)
	}
	s.policy, err = s.loaded.policy(false)
	if err != nil {
		return nil, err
	}
	if m := s.loaded.model; m.Compute() == dtypes.BFloat16 && backend.IsGo(m.Backend()) {
		// A LoRA step at the SmolLM2-135M and Gemma-3-270M shapes takes
		// 2.4× as long in bfloat16 as in float32 on this backend.
		fmt.Fprintln(out, "grpokit: warning: compute bfloat16 on the pure-Go backend is 2–3× slower than float32 "+
			"(bfloat16 is for XLA/GPU); a LoRA base stays as stored (bf16) either way: set model.dtype: float32 for speed here")
	}
	if c.dtypeNote != "" {
		fmt.Fprintln(out, "grpokit: "+c.dtypeNote)
	}
	fmt.Fprintf(out, "grpokit: model %s (%d parameters, %s), %d training / %d eval examples, rewards %s\n",
		cmp.Or(c.Model.Path, "tiny (from scratch)"), s.loaded.model.NumParams(), trainingForm(c.Model, s.loaded.model),
		len(s.train), len(s.eval), rewardNames(s.rewards))
	return s, nil
}

// tinyWords lists the one-token words of c's tiny model: its words, the
// dataset's most frequent ones and the constraint's choices, sorted and
// without repeats.
func tinyWords(c *runConfig, train dataset.SliceDataset) []string {
	t := c.Model.Tiny
	words := slices.Clone(t.Words)
	if t.WordsFromDataset > 0 {
		words = append(words, frequentWords(train, t.WordsFromDataset)...)
	}
	if c.Constraint != nil {
		words = append(words, c.Constraint.Choices...)
	}
	slices.Sort(words)
	return slices.Compact(words)
}

// checkPromptLengths fails before any training when a prompt (after
// max_prompt_length's truncation) and max_completion_length do not fit the
// model's context: found at the first generation instead, the error came
// after the warm start and left a checkpoint-0 that a fixed config's fresh
// run then had to overwrite.
func (s *setup) checkPromptLengths(c *runConfig) error {
	limit := s.loaded.model.Config().MaxPositionEmbeddings
	if limit <= 0 {
		return nil
	}
	for _, set := range []struct {
		name string
		ds   dataset.SliceDataset
	}{{"training", s.train}, {"eval", s.eval}} {
		name, ds := set.name, set.ds
		over, first, longest := 0, -1, 0
		for i, ex := range ds {
			ids, err := s.policy.PromptIDs(ex, c.MaxPromptLength)
			if err != nil {
				return fmt.Errorf("grpokit: %s example %d: %w", name, i+1, err)
			}
			if len(ids)+c.MaxCompletionLength > limit {
				over++
				if first < 0 {
					first = i
				}
				longest = max(longest, len(ids))
			}
		}
		if over > 0 {
			return fmt.Errorf("grpokit: %d %s prompts do not fit the model's context (max_position_embeddings %d) with max_completion_length %d: "+
				"the first is example %d, the longest has %d tokens; set max_prompt_length (prompts are cut from the left) to at most %d, or lower max_completion_length",
				over, name, limit, c.MaxCompletionLength, first+1, longest, limit-c.MaxCompletionLength)
		}
	}
	return nil
}

func rewardNames(rs []reward.Named) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

// evaluate prints the greedy rewards of the policy on the eval examples.
func (s *setup) evaluate(ctx context.Context, c *runConfig, label string, out io.Writer) error {
	if c.Eval.N == 0 {
		return nil
	}
	if len(c.Tools) > 0 {
		fmt.Fprintf(out, "%s: no evaluation (eval runs single turns; with tools, evaluate trajectories in Go with agent.Runner)\n", label)
		return nil
	}
	budget, err := memplan.BudgetFromEnv()
	if err != nil {
		return err
	}
	res, err := grpo.Evaluate(ctx, s.policy, s.eval, s.rewards, grpo.EvalOptions{
		MaxCompletionLength: cmp.Or(c.Eval.MaxCompletionLength, c.MaxCompletionLength), MaxPromptLength: c.MaxPromptLength,
		Memory: &budget, GCLimit: true, Logger: newLogger()})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s (greedy, %d examples): reward %.3f", label, len(res.Completions), res.Reward)
	for _, st := range res.Scores.Stats {
		fmt.Fprintf(out, " | %s %.3f", st.Name, st.Mean)
	}
	fmt.Fprintln(out)
	return nil
}

// train runs c: optional warm start, GRPO, final save, plots, evaluation.
func train(ctx context.Context, c runConfig, out io.Writer) error {
	start := time.Now()
	if err := c.validate(); err != nil {
		return err
	}
	interrupt.SetUnsaved(ctx, "nothing trained yet (the run was being prepared)")
	// The folder is locked before anything is read or written in it, and
	// stays locked (the trainer is handed the lock) until the command ends:
	// a second train started on the same folder stops here, whenever it
	// starts, instead of rewriting initial-model under the first.
	lock, err := checkpoint.Lock(c.OutputDir)
	if err != nil {
		return outputDirInUse(err)
	}
	defer lock.Release()
	from := ""
	if c.Resume {
		var err error
		from, err = grpo.LatestCheckpoint(c.OutputDir)
		if errors.Is(err, checkpoint.ErrNoCheckpoint) {
			// As TRL's resume_from_checkpoint=True: resuming nothing is an
			// error, not a fresh run started in its place.
			return fmt.Errorf("grpokit train: resume: no checkpoint in output_dir %s to resume from; "+
				"to start a fresh run there, drop -resume (and resume: true from the config): %w", c.OutputDir, checkpoint.ErrNoCheckpoint)
		}
		if err != nil {
			return err
		}
	}
	// Before prepare writes initial-model and the model is evaluated, a run
	// that would be refused (the folder held by a running trainer, or by
	// another run's checkpoints when this one resumes none) changes nothing
	// and costs nothing.
	if err := lock.CheckOutputDir(c.OverwriteOutputDir || from != ""); err != nil {
		return outputDirInUse(err)
	}
	s, err := prepare(&c, from != "", out)
	if err != nil {
		return err
	}
	if err := s.checkPromptLengths(&c); err != nil {
		return err
	}
	if c.SFT != nil && c.SFT.Steps > 0 && from == "" {
		if err := warmStart(ctx, &c, s, out); err != nil {
			return err
		}
	}
	tr, err := grpo.NewTrainer(s.policy, c.Config, s.rewards...)
	if err != nil {
		return err
	}
	tr.OutputLock, tr.AdoptRun = lock, c.adopt
	// A run fresh out of the sft section is watched for a collapse of its
	// sampled reward (a resumed run's first steps are not the warm start's).
	tr.WarmStarted = c.SFT != nil && c.SFT.Steps > 0 && from == ""
	if c.MaxSteps == 0 {
		fmt.Fprintf(out, "grpokit: max_steps 0: training num_train_epochs = %g passes over %d examples, %d steps\n",
			c.NumTrainEpochs, len(s.train), c.TrainSteps(len(s.train)))
	}
	if len(c.Tools) > 0 {
		if err := setTools(tr, &c, s, out); err != nil {
			return err
		}
	}
	// eval_strategy: steps evaluates the eval set (eval.n examples of
	// eval_path, else of path) every eval_steps steps, into metrics.jsonl.
	tr.EvalDataset = s.eval
	// The memory plan is checked against $GRPOKIT_MEMORY_LIMIT (else the
	// memory available), and Go's collector gets the plan's limit.
	budget, err := memplan.BudgetFromEnv()
	if err != nil {
		return err
	}
	tr.Memory, tr.GCLimit, tr.OutputLock = &budget, true, lock
	tr.Logger = newLogger() // warnings on stderr, progress on out
	if c.LoggingSteps > 0 {
		tr.Progress = out
	}
	if from != "" {
		if err := tr.Resume(from); err != nil {
			return err
		}
		fmt.Fprintf(out, "resumed from %s (step %d)\n", from, tr.Step())
	}
	if err := s.evaluate(ctx, &c, "before", out); err != nil {
		return err
	}
	trainCtx, cancel := ctx, context.CancelFunc(func() {})
	if c.TimeLimit > 0 {
		trainCtx, cancel = context.WithTimeout(ctx, time.Duration(c.TimeLimit))
	}
	interrupt.SetUnsaved(ctx, fmt.Sprintf("the steps trained since the newest complete checkpoint in %s "+
		"(train -resume continues from it; a checkpoint left half-written is a temporary folder the next run removes)", c.OutputDir))
	err = tr.Train(trainCtx, s.train)
	cancel()
	interrupt.SetUnsaved(ctx, fmt.Sprintf("the plots, and final/ if training had ended (the checkpoints in %s are complete: train -resume continues)", c.OutputDir))
	if errors.Is(err, checkpoint.ErrOutputDirInUse) { // refused by Train itself
		return outputDirInUse(err)
	}
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(out, "time limit %s reached after %d steps; checkpoint saved\n", time.Duration(c.TimeLimit), tr.Step())
		err = nil
	}
	// A plot that fails is said, and fails the command once the run's
	// own work (final weights, evaluation) is done.
	files, perr := plot.Metrics(filepath.Join(c.OutputDir, checkpoint.MetricsFile), c.OutputDir, plot.Options{Window: 10})
	if perr == nil {
		fmt.Fprintf(out, "plots: %v\n", files)
	} else {
		perr = fmt.Errorf("grpokit: plots: %w", perr)
		fmt.Fprintln(out, perr)
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(out, "interrupted after %d steps; the checkpoint in %s resumes it (resume: true or -resume)\n", tr.Step(), c.OutputDir)
			return nil
		}
		return err
	}
	final := filepath.Join(c.OutputDir, "final")
	if err := s.policy.Save(final); err != nil {
		return err
	}
	if err := s.evaluate(ctx, &c, "after", out); err != nil {
		return err
	}
	fmt.Fprintf(out, "trained %d steps in %s; final weights with tokenizer and generation config in %s\n",
		tr.Step(), time.Since(start).Round(time.Second), final)
	return perr
}

// outputDirInUse says grpo's OutputDirInUseError in the command's terms;
// other errors come back as they are.
func outputDirInUse(err error) error {
	var e *checkpoint.OutputDirInUseError
	if !errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("grpokit: output_dir %s holds another run (%s): continue it with -resume, replace it with "+
		"overwrite_output_dir: true in the config, or choose another output_dir (-out): %w", e.Dir, e.Found, checkpoint.ErrOutputDirInUse)
}

// warmStart runs the sft section: supervised steps on the answers.
func warmStart(ctx context.Context, c *runConfig, s *setup, out io.Writer) error {
	target := func(ex dataset.Example) string {
		if c.SFT.Target == "" {
			return ex.Answer
		}
		return strings.ReplaceAll(c.SFT.Target, "{answer}", ex.Answer)
	}
	longest := 1
	for _, ex := range s.train {
		longest = max(longest, len(s.loaded.tok.Tokenizer.Encode(target(ex), false))+1)
	}
	sc := sft.DefaultConfig()
	sc.BatchSize = cmp.Or(c.SFT.BatchSize, 16)
	sc.LearningRate, sc.LRSchedulerType, sc.WarmupSteps = cmp.Or(c.SFT.LearningRate, 3e-3), grpo.ScheduleCosine, max(1, c.SFT.Steps/10)
	sc.MaxPromptLength, sc.MaxCompletionLength, sc.Seed = c.MaxPromptLength, longest, c.Seed
	sc.GradientCheckpointing = c.GradientCheckpointing
	budget, err := memplan.BudgetFromEnv()
	if err != nil {
		return err
	}
	st, err := sft.New(s.policy, sc)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "warm start: %d supervised steps on the answers\n", c.SFT.Steps)
	var progress io.Writer
	if c.LoggingSteps > 0 {
		progress = out
	}
	if _, err := st.Train(ctx, s.train, sft.Options{Steps: c.SFT.Steps, Progress: progress, Logger: newLogger(), Target: target, Memory: &budget, GCLimit: true}); err != nil {
		return err
	}
	return st.Release()
}

// setTools gives the trainer the config's built-in tools.
func setTools(tr *grpo.Trainer, c *runConfig, s *setup, out io.Writer) error {
	var tools []*agent.Tool
	for _, name := range c.Tools {
		t, err := agent.Builtin(name)
		if err != nil {
			return fmt.Errorf("grpokit: config: tools: %w", err)
		}
		tools = append(tools, t)
	}
	format, err := toolFormat(c.ToolCallFormat)
	if err != nil {
		return fmt.Errorf("grpokit: config: tool_call_format: %w", err)
	}
	if format == nil && s.tiny {
		format = agent.Plain{}
	}
	if err := tr.SetTools(grpo.Tools{Tools: tools, Format: format}); err != nil {
		return err
	}
	fmt.Fprintf(out, "tools: %s; every completion is a trajectory (max_tool_calling_iterations %d, 0 = no bound)\n", strings.Join(c.Tools, ", "), c.MaxToolCallingIterations)
	return nil
}

// allPlain reports whether every example of ds has a plain-text prompt
// (no messages, no token ids).
func allPlain(ds dataset.SliceDataset) bool {
	for _, ex := range ds {
		if len(ex.Messages) > 0 || len(ex.PromptIDs) > 0 {
			return false
		}
	}
	return len(ds) > 0
}

// plainPromptsWarning says, once, that chat_template_kwargs does not reach
// plain prompts (as in TRL, which sends its "standard" format's prompts
// untemplated), unless template_plain_prompts renders them; "" when no
// plain prompt meets chat_template_kwargs.
func plainPromptsWarning(c *runConfig, sets ...dataset.SliceDataset) string {
	if len(c.ChatTemplateKwargs) == 0 || c.TemplatePlainPrompts {
		return ""
	}
	plain := 0
	for _, ds := range sets {
		for _, ex := range ds {
			if len(ex.Messages) == 0 && len(ex.PromptIDs) == 0 {
				plain++
			}
		}
	}
	if plain == 0 {
		return ""
	}
	return fmt.Sprintf("grpokit: warning: chat_template_kwargs has no effect on the %d plain-text prompts: as in TRL, "+
		"a {\"prompt\": \"...\"} row goes to the model without the chat template (give {\"prompt\": [{\"role\": \"user\", "+
		"\"content\": ...}]} rows, or set template_plain_prompts: true to render plain prompts as one user message)", plain)
}
