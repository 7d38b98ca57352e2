package grpo_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
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

// TestWarmStartCollapseWarns: a warm-started run whose sampled reward
// falls from 0.5 (the first CollapseWarnSteps steps) to 0 is warned about
// once, at the first step whose last window's mean is below
// CollapseFraction of the first window's; a run not warm-started, one
// whose reward holds, one whose fall stays above the fraction and one with
// the warning off are not.
func TestWarmStartCollapseWarns(t *testing.T) {
	const k = 3
	tests := []struct {
		name     string
		warm     bool
		warnK    int
		after    float64 // each completion's reward after the first k steps (before: 0, 1, 0, 1, …)
		wantStep int     // 0: no warning
	}{
		{"collapse", true, k, 0, 2 * k},
		{"not warm-started", false, k, 0, 0},
		{"reward holds", true, k, 0.5, 0},
		{"fall above the fraction", true, k, 0.3, 0},
		{"off", true, -1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := smallConfig(t)
			cfg.MaxSteps, cfg.LearningRate = 4*k, 0
			var calls atomic.Int64
			perStep := int64(cfg.BatchSize)
			f := reward.Func(func(_, _, _ string) float64 {
				i := calls.Add(1) - 1
				if i < k*perStep {
					return float64(i % 2)
				}
				return tt.after
			})
			tr, err := grpo.NewTrainer(newPolicy(t), cfg, reward.Named{Name: "r", Weight: 1, Scorer: f})
			if err != nil {
				t.Fatal(err)
			}
			var log strings.Builder
			tr.Progress, tr.Logger, tr.ZeroStdWarnSteps = io.Discard, textLogger(&log), -1
			tr.WarmStarted, tr.CollapseWarnSteps = tt.warm, tt.warnK
			if err := tr.Train(context.Background(), sayDataset()); err != nil {
				t.Fatal(err)
			}
			got := log.String()
			n := strings.Count(got, "grpo: sampled reward collapsed after the warm start")
			if tt.wantStep == 0 {
				if n != 0 {
					t.Errorf("want no collapse warning, got:\n%s", got)
				}
				return
			}
			want := fmt.Sprintf("step=%d first_steps_reward=0.5 last_steps_reward=0 window=%d fraction=0.5", tt.wantStep, k)
			if n != 1 || !strings.Contains(got, want) {
				t.Errorf("want one collapse warning with %q, got:\n%s", want, got)
			}
		})
	}
}
