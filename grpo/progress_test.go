package grpo_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/reward"
)

// TestProgressAveragesAndWarns: the progress line every LoggingSteps steps
// shows the mean reward of those steps (as TRL's logs), and a run whose
// groups all tie (a constant reward: frac_reward_zero_std = 1) is warned
// about every Trainer.ZeroStdWarnSteps steps.
func TestProgressAveragesAndWarns(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.LoggingSteps = 4, 2
	tr, err := grpo.NewTrainer(newPolicy(t), cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	tr.Progress = &progress
	var rewards []float64
	tr.OnStep = func(m grpo.Metrics) { rewards = append(rewards, m["reward"]) }
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("progress:\n%s", progress.String())
	}
	for i, line := range lines {
		want := fmt.Sprintf("step %d/4 | reward %.3f (mean of 2 steps)", 2*i+2, (rewards[2*i]+rewards[2*i+1])/2)
		if !strings.HasPrefix(line, want) {
			t.Errorf("line %d = %q, want prefix %q (rewards %v)", i, line, want, rewards)
		}
	}

	cfg = smallConfig(t)
	cfg.MaxSteps, cfg.LoggingSteps = 7, 0
	one := reward.Func(func(_, _, _ string) float64 { return 1 })
	tr, err = grpo.NewTrainer(newPolicy(t), cfg, reward.Named{Name: "one", Weight: 1, Scorer: one})
	if err != nil {
		t.Fatal(err)
	}
	progress.Reset()
	var log strings.Builder
	tr.Progress, tr.Logger, tr.ZeroStdWarnSteps = &progress, textLogger(&log), 3
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	if progress.Len() > 0 {
		t.Errorf("progress (LoggingSteps 0) got %q; the warnings go to the Logger", progress.String())
	}
	got := log.String()
	if strings.Count(got, "level=WARN msg=\"grpo: no learning signal") != 2 || !strings.Contains(got, "step=3 steps_in_a_row=3") ||
		!strings.Contains(got, "step=6 steps_in_a_row=6") {
		t.Errorf("want warnings after 3 and 6 tied steps, got:\n%s", got)
	}
}
