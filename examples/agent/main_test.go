package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for 2 steps")
	}
	var out bytes.Buffer
	cfg := defaults()
	cfg.Steps, cfg.SFTSteps, cfg.Demos, cfg.Prompts, cfg.Generations, cfg.Eval = 2, 4, 8, 1, 2, 4
	cfg.Out, cfg.Quiet, cfg.Stdout = t.TempDir(), true, &out
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"warm start: 4 supervised steps on 8 demonstrations", "before GRPO", "after 2 GRPO steps", "tool-call rate"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, f := range []string{"metrics.jsonl", "reward.png", "eval.jsonl"} {
		if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestCorrect(t *testing.T) {
	for _, tc := range []struct {
		final, answer string
		want          bool
	}{{"5535", "5535", true}, {" 5535.", "5535", true}, {"5536", "5535", false}, {"", "5535", false}, {"<call>calculator 1*2</call>", "2", false}} {
		if got := correct(tc.final, tc.answer); got != tc.want {
			t.Errorf("correct(%q, %q) = %v", tc.final, tc.answer, got)
		}
	}
}

// TestGradientCheckpointingDefault: the example takes TRL's default
// (gradient_checkpointing on) and -gradient-checkpointing=false turns it
// off, in the trainer config it builds.
func TestGradientCheckpointingDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"-gradient-checkpointing=false"}, false},
		{[]string{"-gradient-checkpointing"}, true},
	} {
		cfg := defaults()
		if err := parse(&cfg, tc.args); err != nil {
			t.Fatal(err)
		}
		if got := cfg.GRPO(5).GradientCheckpointing; got != tc.want {
			t.Errorf("%q: gradient_checkpointing %v, want %v", tc.args, got, tc.want)
		}
	}
}
