package grpo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/reward"
)

// TestTrainerPrintsCompletions: with log_completions, every progress line
// is followed by the table of the generation batch's completions
// (num_completions_to_print of them, or all; one per prompt with
// log_unique_prompts), as TRL prints its sample; without it, no table.
func TestTrainerPrintsCompletions(t *testing.T) {
	three := 3
	for _, c := range []struct {
		name   string
		log    bool
		n      *int
		unique bool
		rows   int // table rows each time
	}{
		{"all", true, nil, false, 8},
		{"three", true, &three, false, 3},
		{"unique", true, nil, true, 2},
		{"off", false, nil, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := smallConfig(t)
			cfg.MaxSteps, cfg.LoggingSteps = 4, 2
			cfg.LogCompletions, cfg.NumCompletionsToPrint, cfg.LogUniquePrompts = c.log, c.n, c.unique
			tr, err := grpo.NewTrainer(newPolicy(t), cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
			if err != nil {
				t.Fatal(err)
			}
			var progress strings.Builder
			tr.Progress = &progress
			if err := tr.Train(context.Background(), sayDataset()); err != nil {
				t.Fatal(err)
			}
			out := progress.String()
			tables := strings.Count(out, "completions of step ")
			if want := map[bool]int{true: 2, false: 0}[c.log]; tables != want {
				t.Fatalf("%d tables, want %d:\n%s", tables, want, out)
			}
			if !c.log {
				return
			}
			for _, step := range []string{"2", "4"} {
				i := strings.Index(out, "step "+step+"/4 |")
				j := strings.Index(out, "completions of step "+step+" (")
				if i < 0 || j < i {
					t.Errorf("no table after the progress line of step %s:\n%s", step, out)
				}
			}
			// Each table row starts "| say <word>" (one line per row here).
			if got := strings.Count(out, "| say "); got != 2*c.rows {
				t.Errorf("%d table rows, want %d each time:\n%s", got, c.rows, out)
			}
			if !strings.Contains(out, "| prompt ") || !strings.Contains(out, "| exact | advantage |") {
				t.Errorf("no header:\n%s", out)
			}
		})
	}
}

// TestConfigCompletionsToPrint: num_completions_to_print reads as TRL's
// (null: all), and a negative count is refused with its name.
func TestConfigCompletionsToPrint(t *testing.T) {
	cfg, err := grpo.DecodeConfig([]byte(`{"num_completions_to_print": 4, "log_unique_prompts": true}`))
	if err != nil || cfg.NumCompletionsToPrint == nil || *cfg.NumCompletionsToPrint != 4 || !cfg.LogUniquePrompts {
		t.Fatalf("decoded %v, %v, %v", cfg.NumCompletionsToPrint, cfg.LogUniquePrompts, err)
	}
	if cfg, err := grpo.DecodeConfig([]byte(`{"num_completions_to_print": null}`)); err != nil || cfg.NumCompletionsToPrint != nil {
		t.Errorf("null: %v, %v", cfg.NumCompletionsToPrint, err)
	}
	bad := grpo.DefaultConfig()
	n := -1
	bad.NumCompletionsToPrint = &n
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "NumCompletionsToPrint") {
		t.Errorf("-1: %v", err)
	}
}
