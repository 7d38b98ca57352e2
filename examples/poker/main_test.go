package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/envs/poker"
	"github.com/grpokit/grpokit/grpo"
)

func TestRunSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for 2 steps")
	}
	var out bytes.Buffer
	cfg := defaults()
	cfg.Steps, cfg.Prompts, cfg.Generations, cfg.Eval = 2, 2, 4, 18
	cfg.Out, cfg.Quiet, cfg.Stdout = t.TempDir(), true, &out
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"before training", "after 2 GRPO steps", "macro accuracy"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, f := range []string{"metrics.jsonl", "reward.png", "eval.jsonl", "tiny-model/tokenizer.json", "tiny-model/config.json"} {
		if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestParseConfigFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "poker.json")
	if err := os.WriteFile(file, []byte(`{"steps": 5, "lr": 0.01, "time_limit": "2m"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := defaults()
	if err := parse(&cfg, []string{"-config", file, "-steps", "7"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Steps != 7 || cfg.LR != 0.01 || cfg.TimeLimit.String() != "2m0s" || cfg.Generations != 8 {
		t.Errorf("steps %d lr %g time %s generations %d; want 7 (flag wins), 0.01 (file), 2m0s, 8 (default)",
			cfg.Steps, cfg.LR, cfg.TimeLimit.String(), cfg.Generations)
	}
}

func TestBadInput(t *testing.T) {
	noTok := t.TempDir()
	if err := os.WriteFile(filepath.Join(noTok, "config.json"), []byte(`{"model_type": "llama"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	badJSON := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(badJSON, []byte(`{"stepz": 5}`), 0o644); err != nil {
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
		{"unknown config field", []string{"-config", badJSON}, `unknown field "stepz"`},
		{"missing config file", []string{"-config", filepath.Join(noTok, "none.json")}, "no such file"},
		{"bad duration", []string{"-time", "soon"}, "not a duration"},
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

func TestHandsDataset(t *testing.T) {
	h, err := poker.ParseHand("As 2c Kh 2d 9s")
	if err != nil {
		t.Fatal(err)
	}
	if got := handText(h); got != "2c 2d 9s Kh As" {
		t.Errorf("handText = %q", got)
	}
	d := hands{seed: 3, n: 27, prompt: func(h poker.Hand) grpo.Example { return grpo.Example{Prompt: handText(h)} }}
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
