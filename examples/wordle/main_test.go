package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/envs/wordle"
)

func TestRunSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for 1 step")
	}
	var out bytes.Buffer
	cfg := defaults()
	cfg.Steps, cfg.SFTSteps, cfg.Prompts, cfg.Generations, cfg.Eval, cfg.MaxCompletion, cfg.MaxEarlier = 1, 1, 1, 2, 1, 8, 4
	cfg.Out, cfg.Quiet, cfg.Stdout = t.TempDir(), true, &out
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"before GRPO", "after 1 GRPO steps", "moves consistent"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, f := range []string{"metrics.jsonl", "reward.png", "wins.png", "eval.jsonl"} {
		if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestEnvMoves(t *testing.T) {
	train, _ := wordle.SplitAnswers(1, 200)
	for _, tiny := range []bool{true, false} {
		e := &env{seed: 5, answers: train, maxEarlier: 0, p: prompter{tiny: tiny}}
		ep, err := e.Episode(0)
		if err != nil {
			t.Fatal(err)
		}
		secret := ep.Observe().Answer
		// An unknown word uses up the turn; the next prompt says why.
		done, err := ep.Step(reply("qzxvy"))
		if err != nil || done {
			t.Fatalf("unknown word: done %v, err %v", done, err)
		}
		next := ep.Observe().Prompt
		want := `not an allowed word: "qzxvy"`
		if tiny {
			want = "invalid\nguess\n"
		}
		if !strings.Contains(next, want) {
			t.Errorf("tiny=%v: prompt after an unknown word lacks %q:\n%s", tiny, want, next)
		}
		if done, err := ep.Step(reply(secret)); err != nil || !done || e.wins != 1 || e.done != 1 {
			t.Errorf("winning move: done %v err %v wins %d", done, err, e.wins)
		}
	}
}

func TestBoard(t *testing.T) {
	h, err := wordle.HistoryFor("cigar", []string{"crane", "pious"})
	if err != nil {
		t.Fatal(err)
	}
	// Hand-computed: CRANE vs CIGAR: C green, R yellow, A yellow; PIOUS: I green.
	if got, want := board(h), "crane 21100\npious 02000\nguess\n"; got != want {
		t.Errorf("board = %q, want %q", got, want)
	}
}

func TestBadConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "wordle.json")
	if err := os.WriteFile(file, []byte(`{"steps": "many"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := defaults()
	err := parse(&cfg, []string{"-config", file})
	if err == nil || !strings.Contains(err.Error(), "wordle: config "+file) || !strings.Contains(err.Error(), "steps") {
		t.Fatalf("error %v, want it to name the file and the field", err)
	}
	cfg = defaults()
	cfg.MaxEarlier = 9
	if err := run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "-max-earlier 9: want 0 to 4") {
		t.Fatalf("error %v", err)
	}
}
