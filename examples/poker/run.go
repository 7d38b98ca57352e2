package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/envs/poker"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/exkit"
	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/model"
)

// config is the poker example's settings: the shared ones and the task's.
type config struct {
	exkit.Config
	// Plain gives the tiny model the full English instruction of
	// poker.Prompt instead of the bare hand.
	Plain bool `json:"plain_prompt"`
	// Hidden and Layers shape the tiny model (width, decoder layers).
	Hidden int `json:"hidden"`
	Layers int `json:"layers"`
	// Entropy is the trainer's EntropyCoef: it keeps the policy from
	// collapsing onto a few labels before it has learned them.
	Entropy float64 `json:"entropy_coef"`
	// Schedule is the learning-rate decay after warmup: linear, cosine or
	// constant.
	Schedule string `json:"lr_scheduler_type"`
	// Scale divides centred rewards: group, batch or none.
	Scale string `json:"scale_rewards"`
	// DropTied leaves groups whose rewards all tie out of the loss
	// (grpo.Config.DropZeroStdGroups).
	DropTied bool `json:"drop_tied"`
	// Order arranges the tiny model's cards: "grouped" (equal ranks
	// together, bigger groups first, as a player holds a hand) or "rank"
	// (sorted by rank).
	Order string `json:"order"`
	// EvalEvery evaluates the held-out hands every this many steps during
	// training (the learning curve in eval.jsonl); 0 means only before
	// and after.
	EvalEvery int `json:"eval_every"`
	// MaxCompletion caps the tokens of a training completion; 0 means the
	// longest label and its EOS (under the constraint no completion is
	// longer, so a larger cap changes nothing but the setting).
	MaxCompletion int `json:"max_completion_length"`
	// SFTLR is the supervised warm start's peak learning rate
	// (-sft-steps; a cosine decay after a warmup of a tenth).
	SFTLR float64 `json:"sft_learning_rate"`
	// Rows, if set, names a JSONL file that receives the run's rows and
	// the program then exits without training: the training rows in the
	// order the trainer visits them without shuffling (max_steps × prompts
	// of them), then the held-out hands. A reference trainer (TRL) reads
	// them to train on the same rows.
	Rows string `json:"-"`
}

// sftBatch is the labelled hands of a warm-start step.
const sftBatch = 16

// defaults are the settings of `go run ./examples/poker`.
func defaults() config {
	return config{Config: exkit.Config{
		Train: "full", LoRARank: 8, Steps: 8000, Generations: 8, Prompts: 16, GradientCheckpointing: true,
		LR: 1e-3, Temperature: 1, SFTSteps: -1, Eval: 540, // 60 hands per class: a greedy pass takes well under a second
		Out: filepath.Join("runs", "poker"), Seed: 1, TimeLimit: exkit.Duration(22 * time.Minute),
	}, Hidden: 64, Layers: 2, Entropy: 0.1, Schedule: "cosine", Scale: "group", Order: "grouped",
		EvalEvery: 500, SFTLR: 1e-4}
}

func parse(cfg *config, args []string) error {
	return exkit.Parse("poker", cfg, &cfg.Config, func(fs *flag.FlagSet) {
		fs.BoolVar(&cfg.Plain, "plain-prompt", cfg.Plain, "give the tiny model poker.Prompt's English instruction, not the bare hand")
		fs.IntVar(&cfg.EvalEvery, "eval-every", cfg.EvalEvery, "evaluate the held-out hands every N steps while training (0: only before and after)")
		fs.IntVar(&cfg.Hidden, "hidden", cfg.Hidden, "tiny model: hidden size")
		fs.IntVar(&cfg.Layers, "layers", cfg.Layers, "tiny model: decoder layers")
		fs.Float64Var(&cfg.Entropy, "entropy", cfg.Entropy, "entropy bonus coefficient (grpo.Config.EntropyCoef)")
		fs.StringVar(&cfg.Schedule, "schedule", cfg.Schedule, "learning-rate decay after warmup: linear, cosine or constant")
		fs.StringVar(&cfg.Scale, "scale-rewards", cfg.Scale, "advantage scaling: group, batch or none")
		fs.StringVar(&cfg.Order, "order", cfg.Order, "tiny model's card order: grouped (equal ranks together, bigger groups first) or rank (sorted by rank)")
		fs.BoolVar(&cfg.DropTied, "drop-tied", cfg.DropTied, "leave groups whose rewards all tie out of the loss (grpo.Config.DropZeroStdGroups)")
		fs.IntVar(&cfg.MaxCompletion, "max-completion-length", cfg.MaxCompletion, "cap on a training completion's tokens (0: the longest label and its EOS)")
		fs.Float64Var(&cfg.SFTLR, "sft-lr", cfg.SFTLR, "peak learning rate of the supervised warm start (-sft-steps: steps of 16 labelled hands before GRPO)")
		fs.StringVar(&cfg.Rows, "rows", cfg.Rows, "write the training rows (in visiting order, unshuffled) and the held-out hands to this JSONL file, then exit")
	}, args)
}

// rankWords and suitWords spell a card for the tiny model: one token per
// rank and one per suit (the tokenizer would split "Kh" or " 9" into
// pieces of varying length).
var (
	rankWords = [...]string{"Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten", "Jack", "Queen", "King", "Ace"}
	suitWords = [...]string{"clubs", "diamonds", "hearts", "spades"}
)

// tinyModel is the embedded default, a Llama-shaped decoder of the given
// shape, and a tokenizer in which every label word, rank word and suit
// word is one token.
func tinyModel(hidden, layers int) exkit.Tiny {
	words := []string{"user", "assistant", "system"}
	for _, l := range poker.Labels() {
		words = append(words, strings.Fields(l)...)
	}
	words = append(append(words, rankWords[:]...), suitWords[:]...)
	slices.Sort(words)
	return exkit.Tiny{Words: slices.Compact(words), Hidden: hidden, Layers: layers, Heads: max(1, hidden/32),
		Intermediate: 4 * hidden, MaxPositions: 256}
}

// tinyBOS starts every tiny prompt: a special token of the tiny tokenizer
// (tokenizer.ChatMLSpecials), so it is one token that no text makes.
const tinyBOS = "<|im_start|>"

// sortCards returns h's cards sorted by rank, then suit.
func sortCards(h poker.Hand) poker.Hand {
	slices.SortFunc(h[:], func(a, b poker.Card) int {
		if a.Rank != b.Rank {
			return int(a.Rank) - int(b.Rank)
		}
		return int(a.Suit) - int(b.Suit)
	})
	return h
}

// handText writes a hand with its cards sorted by rank then suit
// ("2c 5d 9h Kh As"), so that pairs sit side by side.
func handText(h poker.Hand) string { return sortCards(h).String() }

// arrange returns h's cards as a player holds them: cards of equal rank
// together, bigger groups first, groups of the same size from high rank to
// low, suits in a fixed order inside a group ("Nine Nine Nine King Two").
func arrange(h poker.Hand) poker.Hand {
	var count [poker.Ace + 1]int
	for _, c := range h {
		count[c.Rank]++
	}
	slices.SortFunc(h[:], func(a, b poker.Card) int {
		switch {
		case count[a.Rank] != count[b.Rank]:
			return count[b.Rank] - count[a.Rank]
		case a.Rank != b.Rank:
			return int(b.Rank) - int(a.Rank)
		}
		return int(a.Suit) - int(b.Suit)
	})
	return h
}

// tinyText is the tiny model's prompt: a start token, the ranks of the
// cards as a player arranges them (arrange; with grouped false, simply
// sorted by rank), then their suits in the same order, one token each
// ("<|im_start|> Nine Nine Nine King Two clubs diamonds spades hearts
// spades" and a newline: 12 tokens; the leading space makes the first rank
// the same token as the others). The prompt holds the five cards and
// nothing computed from them; the order puts equal ranks side by side (a
// pair is two equal neighbours, a straight five consecutive ranks, a flush
// five equal suits). The start token plays the part of a real model's BOS:
// attention can rest on it, so a head that looks for "another card of my
// rank" sees how many there are in how much weight is left on it (without
// it a card's own position is its only match and a pair looks like a
// single card).
func tinyText(h poker.Hand, grouped bool) string {
	if grouped {
		h = arrange(h)
	} else {
		h = sortCards(h)
	}
	var b strings.Builder
	b.WriteString(tinyBOS)
	for _, c := range h {
		b.WriteString(" " + rankWords[c.Rank-poker.Two])
	}
	for _, c := range h {
		b.WriteString(" " + suitWords[c.Suit])
	}
	b.WriteByte('\n')
	return b.String()
}

// hands is the training Dataset: example i is a uniformly random hand of
// class i mod 9, drawn from a seed made of the run's seed and i, so every
// class is equally frequent and the same index always gives the same hand.
type hands struct {
	seed   uint64
	n      int
	prompt func(poker.Hand) dataset.Example
}

func (d hands) Len() int { return d.n }

func (d hands) Example(i int) (dataset.Example, error) {
	if i < 0 || i >= d.n {
		return dataset.Example{}, fmt.Errorf("poker: example %d out of range", i)
	}
	h, c := d.hand(i)
	ex := d.prompt(h)
	ex.Answer = c.String()
	return ex, nil
}

// hand returns example i's hand and class.
func (d hands) hand(i int) (poker.Hand, poker.Class) {
	c := poker.Class(i % poker.NumClasses)
	return poker.NewSampler(d.seed ^ uint64(i+1)*0x9e3779b97f4a7c15).Hand(c), c
}

// result is one evaluation, as written to eval.json.
type result struct {
	Step          int                `json:"step"`
	Accuracy      float64            `json:"accuracy"`
	MacroAccuracy float64            `json:"macro_accuracy"`
	ValidShare    float64            `json:"valid_share"`
	MeanReward    float64            `json:"mean_reward"`
	PerClass      map[string]float64 `json:"per_class"`
	// Confusion[t][p] counts held-out hands of class t labelled p.
	Confusion [poker.NumClasses][poker.NumClasses]int `json:"confusion"`
	Seconds   float64                                 `json:"seconds"`
}

// validate checks the shared settings and the task's before anything is
// built, naming the flag of each bad value.
func (c *config) validate() error {
	errs := []error{c.Validate("poker")}
	if c.Model == "" && (c.Hidden < 1 || c.Layers < 1) {
		errs = append(errs, fmt.Errorf("poker: -hidden %d -layers %d: want both ≥ 1", c.Hidden, c.Layers))
	}
	if !(c.Entropy >= 0) {
		errs = append(errs, fmt.Errorf("poker: -entropy %g: want ≥ 0", c.Entropy))
	}
	if !slices.Contains([]string{"linear", "cosine", "constant"}, c.Schedule) {
		errs = append(errs, fmt.Errorf("poker: -schedule %q: want linear, cosine or constant", c.Schedule))
	}
	if !slices.Contains([]string{"group", "batch", "none"}, c.Scale) {
		errs = append(errs, fmt.Errorf("poker: -scale-rewards %q: want group, batch or none", c.Scale))
	}
	if c.Order != "grouped" && c.Order != "rank" {
		errs = append(errs, fmt.Errorf("poker: -order %q: want grouped or rank", c.Order))
	}
	if c.MaxCompletion < 0 {
		errs = append(errs, fmt.Errorf("poker: -max-completion-length %d: want ≥ 0", c.MaxCompletion))
	}
	if !(c.SFTLR > 0) && c.SFTSteps > 0 {
		errs = append(errs, fmt.Errorf("poker: -sft-lr %g: want > 0", c.SFTLR))
	}
	if c.EvalEvery < 0 {
		errs = append(errs, fmt.Errorf("poker: -eval-every %d: want ≥ 0", c.EvalEvery))
	}
	return errors.Join(errs...)
}

func run(ctx context.Context, cfg config) error {
	out := cfg.Output()
	if err := cfg.validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return fmt.Errorf("poker: %w", err)
	}
	start := time.Now()
	s, err := exkit.Load("poker", &cfg.Config, tinyModel(cfg.Hidden, cfg.Layers))
	if err != nil {
		return err
	}
	defer s.Close()
	// The model may say exactly one label, then EOS.
	var seqs [][]int
	maxLabel := 0
	for _, l := range poker.Labels() {
		ids := s.Encode(l)
		seqs = append(seqs, ids)
		maxLabel = max(maxLabel, len(ids))
	}
	policy, err := s.Policy(&cfg.Config, model.NewTrie(seqs, s.Tok.EOS[0]))
	if err != nil {
		return fmt.Errorf("poker: %w", err)
	}
	prompt := func(h poker.Hand) dataset.Example {
		if s.Tiny && !cfg.Plain {
			// The bare hand, no chat template: 12 tokens, so every
			// forward pass is short.
			return dataset.Example{Prompt: tinyText(h, cfg.Order == "grouped")}
		}
		text := poker.Prompt(h)
		return dataset.Example{Messages: []dataset.Message{{Role: "user", Content: text}}, Prompt: text}
	}
	fmt.Fprintf(out, "poker: model %s (%d parameters, %s training), tokenizer vocabulary %d\n",
		s.Dir, s.Model.NumParams(), cfg.Train, s.Tok.Tokenizer.VocabSize())

	// Held-out hands: a sampler seed the training set never uses.
	test := poker.NewSampler(uint64(cfg.Seed) + 1_000_003).Batch(cfg.Eval)
	data := hands{seed: uint64(cfg.Seed), n: poker.NumClasses * 100_000, prompt: prompt}
	if cfg.Rows != "" {
		if err := writeRows(cfg.Rows, data, cfg.Steps*cfg.Prompts, test, prompt); err != nil {
			return err
		}
		fmt.Fprintf(out, "poker: wrote %d training rows and %d held-out hands to %s\n", cfg.Steps*cfg.Prompts, len(test), cfg.Rows)
		return nil
	}
	evaluate := func(step int) (poker.Report, error) {
		t0 := time.Now()
		exs := make([]dataset.Example, len(test))
		truths := make([]poker.Class, len(test))
		for i, ex := range test {
			exs[i], truths[i] = prompt(ex.Hand), ex.Class
		}
		preds, err := exkit.Greedy(ctx, policy, exs, maxLabel+1, 96, &s.Memory)
		if err != nil {
			return poker.Report{}, fmt.Errorf("poker: %w", err)
		}
		rep, err := poker.Evaluate(preds, truths)
		if err != nil {
			return rep, err
		}
		if err := exkit.AppendJSONLine(filepath.Join(cfg.Out, "eval.jsonl"), toResult(step, rep, time.Since(t0))); err != nil {
			return rep, err
		}
		return rep, nil
	}
	if cfg.SFTSteps > 0 && s.From == "" {
		// The warm start learns the label of hands the GRPO rows and the
		// held-out hands never use (a sampler seed of its own).
		sftData := hands{seed: uint64(cfg.Seed) + 2_000_003, n: data.n, prompt: prompt}
		pairs := make([]exkit.Pair, min(data.n, cfg.SFTSteps*sftBatch))
		for i := range pairs {
			ex, err := sftData.Example(i)
			if err != nil {
				return err
			}
			pairs[i] = exkit.Pair{Prompt: ex, Target: ex.Answer}
		}
		fmt.Fprintf(out, "\nwarm start: %d supervised steps × %d labelled hands, lr %g\n", cfg.SFTSteps, sftBatch, cfg.SFTLR)
		t0 := time.Now()
		if err := exkit.SFT(ctx, s, policy, pairs, cfg.SFTSteps, sftBatch, cfg.SFTLR, cfg.Seed, cfg.Progress()); err != nil {
			return fmt.Errorf("poker: %w", err)
		}
		fmt.Fprintf(out, "warm start done in %s\n", time.Since(t0).Round(time.Second))
	}
	gc := cfg.GRPO(10)
	gc.MaxPromptLength = 0
	gc.MaxCompletionLength = maxLabel + 1
	if cfg.MaxCompletion > 0 {
		gc.MaxCompletionLength = cfg.MaxCompletion
	}
	gc.LRSchedulerType = grpo.Schedule(cfg.Schedule)
	gc.ScaleRewards = loss.ScaleRewards(cfg.Scale)
	gc.EntropyCoef = cfg.Entropy
	gc.DropZeroStdGroups = cfg.DropTied
	gc.WarmupSteps = float64(min(20, cfg.Steps/10))
	trainer, err := grpo.NewTrainer(policy, gc, poker.Rewards()...)
	if err != nil {
		return fmt.Errorf("poker: %w", err)
	}
	trainer.Progress = out
	s.Limit(trainer)
	if err := exkit.Resume(trainer, s.From, out); err != nil {
		return fmt.Errorf("poker: %w", err)
	}
	before, err := evaluate(trainer.Step())
	if err != nil {
		return err
	}
	label := "before training"
	if trainer.Step() > 0 {
		label = fmt.Sprintf("at step %d", trainer.Step())
	}
	fmt.Fprintf(out, "\n%s (%d held-out hands, greedy):\n%s", label, len(test), before)
	var evalErr error
	if cfg.EvalEvery > 0 {
		trainer.OnStep = func(grpo.Metrics) {
			if step := trainer.Step(); step%cfg.EvalEvery == 0 && step < cfg.Steps && evalErr == nil {
				rep, err := evaluate(step)
				evalErr = err
				if !cfg.Quiet && err == nil {
					fmt.Fprintf(out, "step %d: held-out macro accuracy %.1f%%, mean reward %.3f\n", step, 100*rep.MacroAccuracy, rep.MeanReward)
				}
			}
		}
	}
	if cfg.Steps > 0 {
		fmt.Fprintf(out, "\nGRPO: %d steps × %d hands × %d samples, lr %g\n", cfg.Steps, cfg.Prompts, cfg.Generations, cfg.LR)
	}
	trainTime, stop, err := exkit.Train(ctx, "poker", &cfg.Config, out, trainer.Step,
		func(ctx context.Context) error { return errors.Join(trainer.Train(ctx, data), evalErr) },
		func() error { return plot(cfg.Out) })
	if stop || err != nil {
		return err
	}
	after, err := evaluate(trainer.Step())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nafter %d GRPO steps (%s training, %s in all):\n%s", trainer.Step(),
		trainTime.Round(time.Second), time.Since(start).Round(time.Second), after)
	fmt.Fprint(out, "\n", compare(before, after))
	fmt.Fprintf(out, "\nafter training, true class (rows) against the label given (columns):\n%s", after.ConfusionTable())
	fmt.Fprintf(out, "outputs in %s: metrics.jsonl, reward.png, eval.jsonl, checkpoints\n", cfg.Out)
	return nil
}

// compare renders the before/after accuracy table.
func compare(before, after poker.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s %8s %8s\n", "class", "before", "after")
	for c := range poker.NumClasses {
		fmt.Fprintf(&b, "%-16s %7.1f%% %7.1f%%\n", poker.Class(c), 100*before.PerClass[c].Accuracy(), 100*after.PerClass[c].Accuracy())
	}
	fmt.Fprintf(&b, "%-16s %7.1f%% %7.1f%%\n", "macro accuracy", 100*before.MacroAccuracy, 100*after.MacroAccuracy)
	fmt.Fprintf(&b, "%-16s %7.1f%% %7.1f%%\n", "accuracy", 100*before.Accuracy, 100*after.Accuracy)
	fmt.Fprintf(&b, "%-16s %8.3f %8.3f\n", "mean reward", before.MeanReward, after.MeanReward)
	return b.String()
}

func toResult(step int, rep poker.Report, d time.Duration) result {
	r := result{Step: step, Accuracy: rep.Accuracy, MacroAccuracy: rep.MacroAccuracy, ValidShare: rep.ValidShare,
		MeanReward: rep.MeanReward, PerClass: map[string]float64{}, Confusion: rep.Confusion, Seconds: d.Seconds()}
	for c, cr := range rep.PerClass {
		r.PerClass[poker.Class(c).String()] = cr.Accuracy()
	}
	return r
}

// plot draws the mean reward per step with its 25-step moving average.
func plot(dir string) error {
	lines, err := exkit.MetricLines(filepath.Join(dir, checkpoint.MetricsFile), 25, "reward")
	if err != nil {
		return err
	}
	return exkit.PlotLines(filepath.Join(dir, "reward.png"), "poker: mean reward per GRPO step (class-weighted)", "step", "reward", lines...)
}

// row is one line of the -rows file.
type row struct {
	Split  string `json:"split"` // "train" or "eval"
	Index  int    `json:"index"`
	Prompt any    `json:"prompt"` // the chat messages, or the plain text
	Answer string `json:"answer"`
	Hand   string `json:"hand"`
}

// writeRows writes the first n training rows of data in visiting order
// (unshuffled) and the held-out hands to path as JSONL.
func writeRows(path string, data hands, n int, test []poker.Example, prompt func(poker.Hand) dataset.Example) error {
	var rows []row
	for i := range min(n, data.Len()) {
		ex, err := data.Example(i)
		if err != nil {
			return err
		}
		h, _ := data.hand(i)
		rows = append(rows, row{Split: "train", Index: i, Prompt: exkit.RowPrompt(ex), Answer: ex.Answer, Hand: handText(h)})
	}
	for i, ex := range test {
		rows = append(rows, row{Split: "eval", Index: i, Prompt: exkit.RowPrompt(prompt(ex.Hand)), Answer: ex.Answer, Hand: handText(ex.Hand)})
	}
	if err := exkit.WriteJSONLines(path, rows); err != nil {
		return fmt.Errorf("poker: -rows: %w", err)
	}
	return nil
}
