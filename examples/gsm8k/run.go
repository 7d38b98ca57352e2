package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/envs/gsm8k"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/exkit"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/tokenizer"
)

// config is the GSM8K example's settings.
type config struct {
	exkit.Config
	// MaxCompletion is the most tokens generated per answer.
	MaxCompletion int `json:"max_completion_length"`
	// Plain gives the tiny model the seed's chat prompt (system prompt and
	// question) instead of the bare question.
	Plain bool `json:"plain_prompt"`
	// WarmOut, if set, names a folder that receives the model after the
	// supervised warm start (SFTSteps steps on the worked solutions, in the
	// seed's format), merged into one Hugging Face folder; the program
	// evaluates the model before the warm start and then exits without
	// GRPO. It is how a pretrained model is taught the answer format: GRPO
	// runs from that folder next (-model DIR).
	WarmOut string `json:"warm_out"`
	// Rows, if set, names a JSONL file that receives the training rows in
	// the order an unshuffled trainer visits them (Steps × Prompts) and the
	// held-out problems; the program then exits. bench/trl/gsm8k.py reads
	// it to train on the same rows.
	Rows string `json:"-"`
}

// defaults are the settings of `go run ./examples/gsm8k`.
func defaults() config {
	return config{Config: exkit.Config{
		Train: "full", LoRARank: 8, Steps: 60, Generations: 8, Prompts: 2, GradientCheckpointing: true,
		LR: 2e-4, Temperature: 1, SFTSteps: 80, Eval: 20,
		Out: filepath.Join("runs", "gsm8k"), Seed: 1,
	}, MaxCompletion: 80}
}

func parse(cfg *config, args []string) error {
	return exkit.Parse("gsm8k", cfg, &cfg.Config, func(fs *flag.FlagSet) {
		fs.BoolVar(&cfg.Plain, "plain-prompt", cfg.Plain, "give the tiny model the seed's chat prompt, not the bare question")
		fs.IntVar(&cfg.MaxCompletion, "max-completion", cfg.MaxCompletion, "most tokens per answer")
		fs.StringVar(&cfg.WarmOut, "warm-out", cfg.WarmOut, "run the supervised warm start (-sft-steps, worked solutions in the answer format) on -model, write the result to this folder (Hugging Face layout) and exit")
		fs.StringVar(&cfg.Rows, "rows", cfg.Rows, "write the training rows (in visiting order, unshuffled) and the held-out problems to this JSONL file, then exit")
	}, args)
}

// loadData reads train.jsonl and test.jsonl from dir, or with dir "" the
// copy of GSM8K shipped in package envs/gsm8k.
func loadData(dir string) (train, test []gsm8k.Example, err error) {
	if dir == "" {
		if train, err = gsm8k.Train(); err != nil {
			return nil, nil, err
		}
		test, err = gsm8k.Test()
		return train, test, err
	}
	for _, f := range []struct {
		name string
		dst  *[]gsm8k.Example
	}{{"train.jsonl", &train}, {"test.jsonl", &test}} {
		path := filepath.Join(dir, f.name)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("gsm8k: data file %s not found: give -data a folder holding train.jsonl and test.jsonl (GSM8K from github.com/openai/grade-school-math)", path)
		}
		if *f.dst, err = gsm8k.Load(path); err != nil {
			return nil, nil, err
		}
	}
	return train, test, nil
}

var (
	letters = regexp.MustCompile(`\p{L}+`)
	calc    = regexp.MustCompile(`<<[^>]*>>`)
)

// tinyModel is the embedded default: 2 layers of width 96 and a tokenizer
// in which the 300 most frequent words of the questions, the format's tags
// and the prompt's words are single tokens.
func tinyModel(train []gsm8k.Example) exkit.Tiny {
	texts := make([]string, len(train))
	for i, ex := range train {
		texts[i] = ex.Question + " " + ex.Solution
	}
	words := tokenizer.FrequentWords(texts, letters, 300)
	words = append(words, "user", "assistant", "system", "<reasoning", "<answer", "</", ">\n", "reasoning", "answer",
		"Respond", "following", "format", "Question")
	slices.Sort(words)
	return exkit.Tiny{Words: slices.Compact(words), Hidden: 96, Layers: 2, Heads: 4, Intermediate: 256, MaxPositions: 512}
}

// target is the warm-start completion of ex in the seed's strict format:
// the reasoning, then the gold number. The reasoning is the worked solution
// (calculator notes removed), whole when whole, else its last step cut to
// 24 words, which a model built from scratch can imitate.
func target(ex gsm8k.Example, whole bool) string {
	sol := ex.Solution
	if i := strings.LastIndex(sol, "####"); i >= 0 {
		sol = sol[:i]
	}
	sol = strings.TrimSpace(calc.ReplaceAllString(sol, ""))
	reasoning := sol
	if !whole {
		lines := strings.Split(sol, "\n")
		words := strings.Fields(lines[len(lines)-1])
		reasoning = strings.Join(words[:min(24, len(words))], " ")
	}
	return "<reasoning>\n" + reasoning + "\n</reasoning>\n<answer>\n" + ex.Answer + "\n</answer>\n"
}

// example is the prompt of ex: the seed's system prompt and the question
// as a chat, or for the tiny model (compact) just the question, which keeps
// its forward passes short.
func example(ex gsm8k.Example, compact bool) dataset.Example {
	if compact {
		return dataset.Example{Prompt: "Question: " + ex.Question + "\n", Answer: ex.Answer}
	}
	chat := gsm8k.Chat(ex.Question)
	msgs := make([]dataset.Message, len(chat))
	for i, m := range chat {
		msgs[i] = dataset.Message{Role: m.Role, Content: m.Content}
	}
	return dataset.Example{Messages: msgs, Prompt: ex.Question, Answer: ex.Answer}
}

// scores is one evaluation: accuracy, the mean of each seed reward and the
// mean completion length on greedy answers to held-out problems, with the
// first few answers.
type scores struct {
	Step    int                `json:"step"`
	Report  gsm8k.Report       `json:"report"`
	Rewards map[string]float64 `json:"rewards"`
	// MeanTokens is the mean completion length in tokens.
	MeanTokens float64 `json:"mean_completion_tokens"`
	// Samples are the completions of the first held-out problems.
	Samples []string `json:"samples"`
}

// numSamples is how many completions an evaluation keeps in eval.jsonl.
const numSamples = 3

func run(ctx context.Context, cfg config) error {
	out := cfg.Output()
	if err := cfg.Validate("gsm8k"); err != nil {
		return err
	}
	if cfg.MaxCompletion < 8 {
		return fmt.Errorf("gsm8k: -max-completion %d: want ≥ 8", cfg.MaxCompletion)
	}
	train, test, err := loadData(cfg.Data)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return fmt.Errorf("gsm8k: %w", err)
	}
	start := time.Now()
	s, err := exkit.Load("gsm8k", &cfg.Config, tinyModel(train))
	if err != nil {
		return err
	}
	defer s.Close()
	compact := s.Tiny && !cfg.Plain
	policy, err := s.Policy(&cfg.Config, nil)
	if err != nil {
		return fmt.Errorf("gsm8k: %w", err)
	}
	fmt.Fprintf(out, "gsm8k: model %s (%d parameters, %s training), tokenizer vocabulary %d; %d train / %d test problems\n",
		s.Dir, s.Model.NumParams(), cfg.Train, s.Tok.Tokenizer.VocabSize(), len(train), len(test))

	held := test[:min(cfg.Eval, len(test))]
	if cfg.Rows != "" {
		if err := writeRows(cfg.Rows, train[:min(cfg.Steps*cfg.Prompts, len(train))], held, compact); err != nil {
			return err
		}
		fmt.Fprintf(out, "gsm8k: wrote %d training rows and %d held-out problems to %s\n", min(cfg.Steps*cfg.Prompts, len(train)), len(held), cfg.Rows)
		return nil
	}
	from := s.From
	evaluate := func(step int) (scores, error) {
		exs := make([]dataset.Example, len(held))
		for i, ex := range held {
			exs[i] = example(ex, compact)
		}
		comps, err := exkit.Greedy(ctx, policy, exs, cfg.MaxCompletion, 64, &s.Memory)
		if err != nil {
			return scores{}, fmt.Errorf("gsm8k: %w", err)
		}
		rep, err := gsm8k.Evaluate(held, comps)
		if err != nil {
			return scores{}, err
		}
		sc := scores{Step: step, Report: rep, Rewards: map[string]float64{}, Samples: comps[:min(numSamples, len(comps))]}
		for _, c := range comps {
			sc.MeanTokens += float64(len(s.Encode(c))) / float64(len(comps))
		}
		for _, r := range gsm8k.Rewards() {
			for i, c := range comps {
				sc.Rewards[r.Name] += r.Scorer.Score(reward.Sample{Prompt: held[i].Question, Completion: c, Answer: held[i].Answer}) / float64(len(comps))
			}
		}
		if len(comps) > 0 {
			fmt.Fprintf(out, "sample answer to %q…:\n%s\n", truncate(held[0].Question, 60), truncate(comps[0], 300))
		}
		// Every answer, written with one append.
		var lines strings.Builder
		for i, c := range comps {
			line, err := json.Marshal(struct {
				Step       int    `json:"step"`
				Index      int    `json:"index"`
				Completion string `json:"completion"`
			}{step, i, c})
			if err != nil {
				return scores{}, fmt.Errorf("gsm8k: %w", err)
			}
			lines.Write(append(line, '\n'))
		}
		if err := exkit.AppendText(filepath.Join(cfg.Out, "eval-completions.jsonl"), lines.String()); err != nil {
			return scores{}, fmt.Errorf("gsm8k: %w", err)
		}
		return sc, exkit.AppendJSONLine(filepath.Join(cfg.Out, "eval.jsonl"), sc)
	}
	warm := func() error {
		// The tiny model, trained whole from scratch, imitates short
		// targets; a pretrained one the worked solutions that fit in
		// MaxCompletion tokens, 8 a step, which bounds the activations
		// the supervised passes keep (they are not checkpointed).
		var pairs []exkit.Pair
		for _, ex := range train {
			t := target(ex, !s.Tiny)
			if s.Tiny || len(s.Encode(t)) < cfg.MaxCompletion {
				pairs = append(pairs, exkit.Pair{Prompt: example(ex, compact), Target: t})
			}
		}
		lr, batch := 3e-3, 16
		if !s.Tiny {
			lr, batch = sftLR, 8
		}
		fmt.Fprintf(out, "\nwarm start: %d supervised steps × %d on the answer format (%d of %d worked solutions), lr %g\n",
			cfg.SFTSteps, batch, len(pairs), len(train), lr)
		if err := exkit.SFT(ctx, s, policy, pairs, cfg.SFTSteps, batch, lr, cfg.Seed, cfg.Progress()); err != nil {
			return fmt.Errorf("gsm8k: %w", err)
		}
		return nil
	}
	fmt.Fprintf(out, "\nevaluating on %d held-out problems (greedy)\n", len(held))
	if cfg.WarmOut != "" {
		return warmStart(cfg, policy, len(held), evaluate, warm)
	}
	if s.Tiny && cfg.SFTSteps > 0 && from == "" {
		if err := warm(); err != nil {
			return err
		}
	}
	gc := cfg.GRPO(5)
	gc.MaxPromptLength = 256
	gc.MaxCompletionLength = cfg.MaxCompletion
	gc.LRSchedulerType = grpo.ScheduleConstant
	trainer, err := grpo.NewTrainer(policy, gc, gsm8k.Rewards()...)
	if err != nil {
		return fmt.Errorf("gsm8k: %w", err)
	}
	trainer.Progress = out
	// A warm-started run is warned of a collapse of its sampled reward.
	trainer.WarmStarted = s.Tiny && cfg.SFTSteps > 0 && from == ""
	s.Limit(trainer)
	if err := exkit.Resume(trainer, from, out); err != nil {
		return fmt.Errorf("gsm8k: %w", err)
	}
	// A resumed run reuses the evaluation its checkpoint's run logged at
	// this step, which is of the same weights.
	before, ok := loggedEval(filepath.Join(cfg.Out, "eval.jsonl"), trainer.Step(), len(held))
	if !ok {
		if before, err = evaluate(trainer.Step()); err != nil {
			return err
		}
	}
	fmt.Fprint(out, "before GRPO: ", before.Report)

	data := make(dataset.SliceDataset, len(train))
	for i, ex := range train {
		data[i] = example(ex, compact)
	}
	fmt.Fprintf(out, "\nGRPO: %d steps × %d problems × %d samples, lr %g\n", cfg.Steps, cfg.Prompts, cfg.Generations, cfg.LR)
	trainTime, stop, err := exkit.Train(ctx, "gsm8k", &cfg.Config, out, trainer.Step,
		func(ctx context.Context) error { return trainer.Train(ctx, data) },
		func() error { return plot(cfg.Out) })
	if stop || err != nil {
		return err
	}
	after, err := evaluate(trainer.Step())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "after %d GRPO steps (%s training, %s in all): %s", trainer.Step(),
		trainTime.Round(time.Second), time.Since(start).Round(time.Second), after.Report)
	fmt.Fprintf(out, "\n%-22s %8s %8s\n", "greedy, held-out", "before", "after")
	for _, r := range gsm8k.Rewards() {
		fmt.Fprintf(out, "%-22s %8.3f %8.3f\n", "reward "+r.Name, before.Rewards[r.Name], after.Rewards[r.Name])
	}
	fmt.Fprintf(out, "%-22s %7.1f%% %7.1f%%\n", "strict accuracy", 100*before.Report.StrictAccuracy, 100*after.Report.StrictAccuracy)
	fmt.Fprintf(out, "%-22s %7.1f%% %7.1f%%\n", "lenient accuracy", 100*before.Report.LenientAccuracy, 100*after.Report.LenientAccuracy)
	fmt.Fprintf(out, "%-22s %8.1f %8.1f\n", "mean tokens", before.MeanTokens, after.MeanTokens)
	fmt.Fprintf(out, "outputs in %s: metrics.jsonl, reward.png, eval.jsonl, eval-completions.jsonl, checkpoints\n", cfg.Out)
	return nil
}

// loggedEval returns the last evaluation in the eval.jsonl at path of step
// on n problems, and false if there is none.
func loggedEval(path string, step, n int) (scores, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return scores{}, false
	}
	var found scores
	ok := false
	for line := range strings.Lines(string(data)) {
		var sc scores
		if json.Unmarshal([]byte(line), &sc) == nil && sc.Step == step && sc.Report.N == n {
			found, ok = sc, true
		}
	}
	return found, ok
}

// sftLR is the warm start's learning rate for a pretrained model's LoRA
// adapter or weights.
const sftLR = 2e-4

// warmStart is the -warm-out mode: evaluate the model as loaded, run the
// warm start, write the model to cfg.WarmOut (adapters merged) and stop.
// n is the number of held-out problems evaluate scores.
func warmStart(cfg config, policy *grpo.LMPolicy, n int, evaluate func(int) (scores, error), warm func() error) error {
	out := cfg.Output()
	if cfg.SFTSteps < 1 {
		return fmt.Errorf("gsm8k: -warm-out %s: want -sft-steps ≥ 1", cfg.WarmOut)
	}
	// A rerun reuses the evaluation of the model as loaded.
	before, ok := loggedEval(filepath.Join(cfg.Out, "eval.jsonl"), 0, n)
	var err error
	if !ok {
		if before, err = evaluate(0); err != nil {
			return err
		}
	}
	fmt.Fprint(out, "before the warm start: ", before.Report)
	fmt.Fprintf(out, "mean completion %.1f tokens\n", before.MeanTokens)
	t0 := time.Now()
	if err := warm(); err != nil {
		return err
	}
	if a := policy.Adapter(); a != nil {
		err = a.SaveMerged(cfg.WarmOut)
		if err == nil {
			err = policy.Tokenizer().WriteFiles(cfg.WarmOut)
		}
	} else {
		err = policy.Save(cfg.WarmOut)
	}
	if err != nil {
		return fmt.Errorf("gsm8k: -warm-out: %w", err)
	}
	fmt.Fprintf(out, "warm start done in %s; the model is in %s (run GRPO with -model %s)\n",
		time.Since(t0).Round(time.Second), cfg.WarmOut, cfg.WarmOut)
	return nil
}

// dataRow is one line of the -rows file.
type dataRow struct {
	Split  string `json:"split"` // "train" or "eval"
	Index  int    `json:"index"`
	Prompt any    `json:"prompt"` // the chat messages, or the plain text
	Answer string `json:"answer"`
}

// writeRows writes train (in visiting order) and held as JSONL rows.
func writeRows(path string, train, held []gsm8k.Example, compact bool) error {
	var rows []dataRow
	for _, part := range []struct {
		split string
		exs   []gsm8k.Example
	}{{"train", train}, {"eval", held}} {
		for i, ex := range part.exs {
			e := example(ex, compact)
			rows = append(rows, dataRow{Split: part.split, Index: i, Prompt: exkit.RowPrompt(e), Answer: e.Answer})
		}
	}
	if err := exkit.WriteJSONLines(path, rows); err != nil {
		return fmt.Errorf("gsm8k: -rows: %w", err)
	}
	return nil
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// plot draws the total reward and each seed reward per step.
func plot(dir string) error {
	keys := []string{"reward"}
	for _, r := range gsm8k.Rewards() {
		keys = append(keys, "rewards/"+r.Name+"/mean")
	}
	lines, err := exkit.MetricLines(filepath.Join(dir, checkpoint.MetricsFile), 0, keys...)
	if err != nil {
		return err
	}
	return exkit.PlotLines(filepath.Join(dir, "reward.png"), "gsm8k: mean rewards per GRPO step", "step", "reward", lines...)
}
