package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/envs/poker"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/tokenizer"
)

func TestRunSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for 2 steps")
	}
	var out bytes.Buffer
	cfg := defaults()
	cfg.Steps, cfg.Prompts, cfg.Generations, cfg.Eval, cfg.EvalEvery = 2, 2, 4, 18, 1
	cfg.Out, cfg.Stdout = t.TempDir(), &out
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"before training", "step 1: held-out macro accuracy", "after 2 GRPO steps", "macro accuracy"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, f := range []string{"metrics.jsonl", "reward.png", "eval.jsonl", "initial-model/tokenizer.json", "initial-model/config.json"} {
		if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
			t.Error(err)
		}
	}
	// Before, at step 1 (-eval-every 1), after.
	if data, err := os.ReadFile(filepath.Join(cfg.Out, "eval.jsonl")); err != nil || strings.Count(string(data), "\n") != 3 {
		t.Errorf("eval.jsonl: %v, %d lines, want 3", err, strings.Count(string(data), "\n"))
	}

	// A fresh run into the same folder (another seed, no -resume) is refused
	// before it writes anything: the first run's initial-model stays.
	initial := filepath.Join(cfg.Out, "initial-model", "model.safetensors")
	saved, err := os.ReadFile(initial)
	if err != nil {
		t.Fatal(err)
	}
	other := cfg
	other.Seed = 2
	out.Reset()
	if err := run(context.Background(), other); !errors.Is(err, checkpoint.ErrOutputDirInUse) || !strings.Contains(err.Error(), "-overwrite") {
		t.Errorf("fresh run into a used folder: err = %v, want ErrOutputDirInUse with the flags to use", err)
	}
	if now, err := os.ReadFile(initial); err != nil || !bytes.Equal(now, saved) || strings.Contains(out.String(), "before training") {
		t.Errorf("the refused run rewrote initial-model or evaluated (err %v):\n%s", err, out.String())
	}

	// So is a -resume whose settings build another tiny model.
	other.Resume = true
	if err := run(context.Background(), other); err == nil || !strings.Contains(err.Error(), "model.safetensors differs") {
		t.Errorf("resume with another seed: err = %v, want one naming model.safetensors", err)
	}
	if now, err := os.ReadFile(initial); err != nil || !bytes.Equal(now, saved) {
		t.Errorf("the refused resume rewrote initial-model (err %v)", err)
	}

	// -resume continues from checkpoint-2 and trains one more step.
	out.Reset()
	cfg.Resume, cfg.Steps = true, 3
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"resumed from " + filepath.Join(cfg.Out, "checkpoint-2") + " (step 2)", "at step 2 (18 held-out hands", "after 3 GRPO steps"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("resumed output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, "checkpoint-3")); err != nil {
		t.Error(err)
	}
}

// TestRunModelFolder trains with -model DIR, the path a Hugging Face
// checkpoint takes (model.Load, the chat template, the English prompt,
// LoRA, a KL reference): the folder is the tiny model a first run wrote in
// Hugging Face layout (config.json, model.safetensors, tokenizer.json,
// tokenizer_config.json).
func TestRunModelFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model for 2 steps")
	}
	first := defaults()
	first.Steps, first.Eval, first.Out, first.Stdout = 0, 9, t.TempDir(), io.Discard
	if err := run(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cfg := defaults()
	cfg.Model, cfg.Train, cfg.Beta = filepath.Join(first.Out, "initial-model"), "lora", 0.04
	cfg.Steps, cfg.Prompts, cfg.Generations, cfg.Eval, cfg.EvalEvery = 2, 2, 2, 9, 0
	cfg.Out, cfg.Stdout = t.TempDir(), &out
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lora training", "| kl ", "after 2 GRPO steps", "valid labels 100.0%"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, "initial-model")); err == nil {
		t.Error("-model run wrote a tiny model")
	}
}

// TestTinyPromptTokens checks that the tiny tokenizer gives every rank and
// suit of the prompt one token of its own: 12 tokens for every hand, the
// first the start token.
func TestTinyPromptTokens(t *testing.T) {
	dir := t.TempDir()
	if err := tokenizer.WriteTinyDir(dir, tinyModel(64, 2).Words); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	bos, ok := tok.Tokenizer.TokenToID(tinyBOS)
	if !ok {
		t.Fatalf("tiny tokenizer lacks %s", tinyBOS)
	}
	seen := map[int]bool{}
	for _, ex := range poker.NewSampler(7).Batch(200) {
		ids := tok.Tokenizer.Encode(tinyText(ex.Hand, true), false)
		if len(ids) != 12 || ids[0] != bos {
			t.Fatalf("%q: tokens %v, want 12 starting with %s", tinyText(ex.Hand, true), ids, tinyBOS)
		}
		for _, id := range ids {
			seen[id] = true
		}
	}
	if len(seen) != 1+13+4+1 {
		t.Errorf("%d distinct prompt tokens, want 19 (start, 13 ranks, 4 suits, newline)", len(seen))
	}
}

func TestParseConfigFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "poker.json")
	if err := os.WriteFile(file, []byte(`{"max_steps": 5, "learning_rate": 0.01, "time_limit": "2m", "drop_tied": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := defaults()
	if err := parse(&cfg, []string{"-config", file, "-steps", "7"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Steps != 7 || cfg.LR != 0.01 || cfg.TimeLimit.String() != "2m0s" || cfg.Generations != 8 || !cfg.DropTied {
		t.Errorf("steps %d lr %g time %s generations %d drop_tied %t; want 7 (flag wins), 0.01 (file), 2m0s, 8 (default), true",
			cfg.Steps, cfg.LR, cfg.TimeLimit.String(), cfg.Generations, cfg.DropTied)
	}
	// YAML, with TRL's names for the shared settings and the task's.
	yml := filepath.Join(dir, "poker.yaml")
	if err := os.WriteFile(yml, []byte("max_steps: 9\nnum_generations: 4\nlr_scheduler_type: cosine\nentropy_coef: 0.01\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg = defaults()
	if err := parse(&cfg, []string{"-config", yml}); err != nil {
		t.Fatal(err)
	}
	if cfg.Steps != 9 || cfg.Generations != 4 || cfg.Schedule != "cosine" || cfg.Entropy != 0.01 {
		t.Errorf("YAML: steps %d generations %d schedule %s entropy %g", cfg.Steps, cfg.Generations, cfg.Schedule, cfg.Entropy)
	}
}

// TestBenchConfigs checks that the settings of the bench/trl configs (the
// GRPOConfig values bench/trl/poker.py gives TRL, and the results page's
// 60-minute run) reach examples/poker as written.
func TestBenchConfigs(t *testing.T) {
	tests := []struct {
		file    string
		example func(config) bool
		trainer func(grpo.Config) bool
	}{
		{"poker.yaml",
			func(c config) bool {
				return c.Steps == 100 && c.Prompts == 4 && c.Generations == 4 && c.LR == 1e-5 && c.Schedule == "cosine" &&
					c.Entropy == 0 && c.MaxCompletion == 8 && c.Eval == 540 && c.Train == "full"
			},
			func(gc grpo.Config) bool {
				return !gc.ShuffleDataset && gc.TopP == 1 && gc.TopK == 0 && gc.LossType == "dapo" && gc.Beta == 0 &&
					gc.GradientCheckpointing && gc.MaxGradNorm == 1 && gc.Seed == 1 && gc.BatchSize == 16 && gc.LogCompletions
			}},
		{"poker-60min.yaml",
			func(c config) bool {
				return c.Steps == 320 && c.Prompts == 4 && c.Generations == 16 && c.Entropy == 0.1 &&
					c.TimeLimit.String() == "1h0m0s" && c.Eval == 540 && c.Train == "full"
			},
			func(gc grpo.Config) bool { return gc.BatchSize == 64 && gc.NumGenerations == 16 && !gc.ShuffleDataset }},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			cfg := defaults()
			if err := parse(&cfg, []string{"-config", filepath.Join("..", "..", "bench", "trl", tc.file)}); err != nil {
				t.Fatal(err)
			}
			if !tc.example(cfg) {
				t.Errorf("example settings %+v", cfg)
			}
			if gc := cfg.GRPO(10); !tc.trainer(gc) {
				t.Errorf("trainer settings %+v", gc)
			}
		})
	}
}

// TestRows checks -rows: the training rows in the order an unshuffled
// trainer visits them (example i is of class i mod 9), then the held-out
// hands, balanced, and no training.
func TestRows(t *testing.T) {
	cfg := defaults()
	cfg.Steps, cfg.Prompts, cfg.Eval = 3, 4, 18
	cfg.Out, cfg.Stdout = t.TempDir(), io.Discard
	cfg.Rows = filepath.Join(cfg.Out, "rows.jsonl")
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(cfg.Rows)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 12+18 {
		t.Fatalf("%d rows, want 12 training + 18 held-out", len(lines))
	}
	perClass := map[string]int{}
	for i, l := range lines {
		var r row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		h, err := poker.ParseHand(r.Hand)
		if err != nil {
			t.Fatal(err)
		}
		if got := poker.Classify(h).String(); got != r.Answer {
			t.Errorf("row %d: %s is a %s, answer %q", i, r.Hand, got, r.Answer)
		}
		switch {
		case i < 12:
			if r.Split != "train" || r.Index != i || r.Answer != poker.Class(i%9).String() {
				t.Errorf("row %d: %+v, want training example %d of class %s", i, r, i, poker.Class(i%9))
			}
		default:
			if r.Split != "eval" || r.Index != i-12 {
				t.Errorf("row %d: %+v, want held-out hand %d", i, r, i-12)
			}
			perClass[r.Answer]++
		}
	}
	for _, c := range poker.Classes() {
		if perClass[c.String()] != 2 {
			t.Errorf("held-out %s: %d hands, want 2 of each class", c, perClass[c.String()])
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, checkpoint.MetricsFile)); err == nil {
		t.Error("-rows trained: metrics.jsonl written")
	}
}

func TestBadInput(t *testing.T) {
	noTok := t.TempDir()
	if err := os.WriteFile(filepath.Join(noTok, "config.json"), []byte(`{"model_type": "llama"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	badJSON := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(badJSON, []byte(`{"max_step": 5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no tokenizer", []string{"-model", noTok}, "has no tokenizer.json"},
		{"missing model folder", []string{"-model", filepath.Join(noTok, "nope")}, "not a folder"},
		{"bad train mode", []string{"-train", "half"}, `-train "half": want full or lora`},
		{"unknown config field", []string{"-config", badJSON}, `unknown key "max_step" (did you mean "max_steps"?)`},
		{"missing config file", []string{"-config", filepath.Join(noTok, "none.json")}, "no such file"},
		{"bad duration", []string{"-time", "soon"}, "not a duration"},
		{"bad schedule", []string{"-schedule", "fast"}, `-schedule "fast": want linear, cosine or constant`},
		{"bad scaling", []string{"-scale-rewards", "std"}, `-scale-rewards "std": want group, batch or none`},
		{"negative entropy", []string{"-entropy", "-1"}, "-entropy -1: want ≥ 0"},
		{"no layers", []string{"-layers", "0"}, "-hidden 64 -layers 0: want both ≥ 1"},
		{"bad order", []string{"-order", "suit"}, `-order "suit": want grouped or rank`},
		{"negative eval-every", []string{"-eval-every", "-5"}, "-eval-every -5: want ≥ 0"},
		{"negative completion cap", []string{"-max-completion-length", "-1"}, "-max-completion-length -1: want ≥ 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaults()
			cfg.Out = t.TempDir()
			err := parse(&cfg, tc.args)
			if err == nil {
				err = run(context.Background(), cfg)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestArrange(t *testing.T) {
	tests := []struct{ hand, want string }{
		{"9d 9s Kh 9c 2s", "9c 9d 9s Kh 2s"}, // three of a kind first
		{"3h Jd 3c Js Jh", "Jd Jh Js 3c 3h"}, // full house: the three, then the pair
		{"4s Qd 4d Qc 7h", "Qc Qd 4d 4s 7h"}, // two pair: high pair first
		{"2c 7d Kh 5s 9h", "Kh 9h 7d 5s 2c"}, // high card: high to low
		{"Ah 2d 3c 4s 5h", "Ah 5h 4s 3c 2d"}, // wheel: ace first, by rank
		{"8s 8h 8d 8c Td", "8c 8d 8h 8s Td"}, // four of a kind: suits in order
	}
	for _, tt := range tests {
		h, err := poker.ParseHand(tt.hand)
		if err != nil {
			t.Fatal(err)
		}
		if got := arrange(h).String(); got != tt.want {
			t.Errorf("arrange(%s) = %s, want %s", tt.hand, got, tt.want)
		}
	}
}

func TestHandsDataset(t *testing.T) {
	h, err := poker.ParseHand("As 2c Kh 2d 9s")
	if err != nil {
		t.Fatal(err)
	}
	if got := handText(h); got != "2c 2d 9s Kh As" {
		t.Errorf("handText = %q", got)
	}
	if got, want := tinyText(h, false), "<|im_start|> Two Two Nine King Ace clubs diamonds spades hearts spades\n"; got != want {
		t.Errorf("tinyText(rank order) = %q, want %q", got, want)
	}
	if got, want := tinyText(h, true), "<|im_start|> Two Two Ace King Nine clubs diamonds spades hearts spades\n"; got != want {
		t.Errorf("tinyText(grouped) = %q, want %q", got, want)
	}
	d := hands{seed: 3, n: 27, prompt: func(h poker.Hand) dataset.Example { return dataset.Example{Prompt: handText(h)} }}
	for i := range d.Len() {
		ex, err := d.Example(i)
		if err != nil {
			t.Fatal(err)
		}
		h, err := poker.ParseHand(ex.Prompt)
		if err != nil {
			t.Fatal(err)
		}
		if got := poker.Classify(h).String(); got != ex.Answer || ex.Answer != poker.Class(i%9).String() {
			t.Errorf("example %d: %q is a %s, answer %q", i, ex.Prompt, got, ex.Answer)
		}
	}
	if _, err := d.Example(27); err == nil {
		t.Error("index 27 of 27: want an error")
	}
}

// TestWarmStart: -sft-steps runs supervised steps on labelled hands
// before GRPO, and their loss falls (the label words of the first window
// are guesses; later ones have learned at least the labels' form).
func TestWarmStart(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for 60 supervised steps")
	}
	var out bytes.Buffer
	cfg := defaults()
	cfg.Steps, cfg.Prompts, cfg.Generations, cfg.Eval, cfg.EvalEvery = 1, 2, 4, 18, 0
	cfg.SFTSteps, cfg.SFTLR = 60, 3e-3
	cfg.Out, cfg.Stdout = t.TempDir(), &out
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for _, line := range strings.Split(out.String(), "\n") {
		var step, total int
		var loss float64
		if _, err := fmt.Sscanf(line, "sft step %d/%d | loss %g", &step, &total, &loss); err == nil {
			losses = append(losses, loss)
		}
	}
	if len(losses) != 6 || !(losses[5] < losses[0]/2) {
		t.Errorf("warm-start losses %v: want 6 windows, the last under half the first\n%s", losses, out.String())
	}
	if !strings.Contains(out.String(), "warm start: 60 supervised steps × 16 labelled hands") || !strings.Contains(out.String(), "after 1 GRPO steps") {
		t.Errorf("output:\n%s", out.String())
	}
}
