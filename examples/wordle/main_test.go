package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/envs/wordle"
	"github.com/grpokit/grpokit/grpo/grpotest"
)

// TestRunSmoke runs the whole example for a few steps: warm start, GRPO on
// whole games through the Env, evaluation before and after.
func TestRunSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for 2 steps")
	}
	var out bytes.Buffer
	cfg := defaults()
	cfg.Steps, cfg.SFTSteps, cfg.Prompts, cfg.Generations, cfg.Eval = 2, 2, 1, 2, 2
	cfg.Out, cfg.Quiet, cfg.Stdout = t.TempDir(), true, &out
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	// The tiny model's replies are constrained to answer words: even
	// untrained, every move it makes must be a valid one (a reply cut short
	// by the completion length would not be).
	for _, want := range []string{"warm start: 2 supervised steps", "before GRPO: won", "after 2 GRPO steps: won", "invalid)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Count(out.String(), " 0 invalid)") != 2 {
		t.Errorf("invalid moves in the held-out games:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, "metrics.jsonl")); err != nil {
		t.Error(err)
	}
}

// TestGamesEnv checks the example's Env against grpo's contract.
func TestGamesEnv(t *testing.T) {
	train, _ := wordle.SplitAnswers(1, 200)
	for _, tiny := range []bool{true, false} {
		if err := grpotest.TestEnv(games{answers: train[:10], tiny: tiny}, "<guess>crane</guess>", "<guess>slate</guess>"); err != nil {
			t.Errorf("tiny %v: %v", tiny, err)
		}
	}
}

// TestBoard pins the tiny model's board against a game played by hand.
func TestBoard(t *testing.T) {
	g := wordle.NewGame()
	if err := g.Reset("cigar", []string{"crane"}); err != nil {
		t.Fatal(err)
	}
	if got, want := board(g.History()), "GcA YrB YaC XnD XeE\nGUESS"; got != want {
		t.Errorf("board = %q, want %q", got, want)
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
		if got := cfg.GRPO(1).GradientCheckpointing; got != tc.want {
			t.Errorf("%q: gradient_checkpointing %v, want %v", tc.args, got, tc.want)
		}
	}
}
