package grpo_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/grpo/grpotest"
	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/reward"
)

var words = []string{"say", "cat", "dog", "fish", "bird"}

// sayDataset asks for one of four words: "say cat" → "cat".
func sayDataset() dataset.SliceDataset {
	var d dataset.SliceDataset
	for _, w := range words[1:] {
		d = append(d, dataset.Example{Prompt: "say " + w, Answer: w})
	}
	return d
}

// exact scores 1 for a completion whose first word is the answer.
var exact = reward.Func(func(_, completion, answer string) float64 {
	if f := strings.Fields(completion); len(f) > 0 && f[0] == answer {
		return 1
	}
	return 0
})

func smallConfig(t *testing.T) grpo.Config {
	cfg := grpo.DefaultConfig()
	cfg.NumGenerations = 4
	cfg.BatchSize = 8
	cfg.MaxCompletionLength = 3
	cfg.MaxPromptLength = 8
	cfg.LearningRate = 0.1
	cfg.LRSchedulerType = grpo.ScheduleConstant
	cfg.MaxSteps = 100
	cfg.LoggingSteps = 0
	cfg.OutputDir = t.TempDir()
	return cfg
}

func newPolicy(t *testing.T) *grpotest.Policy {
	t.Helper()
	p, err := grpotest.NewPolicy(words, 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func trainRewards(t *testing.T, cfg grpo.Config, f reward.Func) []grpo.Metrics {
	t.Helper()
	return trainOn(t, newPolicy(t), cfg, sayDataset(), reward.Named{Name: "exact", Weight: 1, Scorer: f})
}

// trainOn trains p on data and returns the metrics of every step.
func trainOn(t *testing.T, p grpo.Policy, cfg grpo.Config, data dataset.Dataset, rewards ...reward.Named) []grpo.Metrics {
	t.Helper()
	tr, err := grpo.NewTrainer(p, cfg, rewards...)
	if err != nil {
		t.Fatal(err)
	}
	var ms []grpo.Metrics
	tr.OnStep = func(m grpo.Metrics) { ms = append(ms, m) }
	if err := tr.Train(context.Background(), data); err != nil {
		t.Fatal(err)
	}
	return ms
}

func meanReward(ms []grpo.Metrics) float64 {
	var s float64
	for _, m := range ms {
		s += m["reward"]
	}
	return s / float64(len(ms))
}

func TestTrainerLearnsFake(t *testing.T) {
	for _, lt := range []loss.Type{loss.GRPO, loss.BNPO, loss.DrGRPO, loss.DAPO} {
		t.Run(string(lt), func(t *testing.T) {
			cfg := smallConfig(t)
			cfg.LossType = lt
			ms := trainRewards(t, cfg, exact)
			first, last := meanReward(ms[:5]), meanReward(ms[len(ms)-5:])
			t.Logf("reward first 5 steps %.3f, last 5 steps %.3f", first, last)
			if last < 0.8 || last <= first {
				t.Errorf("reward went from %.3f to %.3f; want ≥ 0.8", first, last)
			}
		})
	}
}

func TestTrainerWrongSignFails(t *testing.T) {
	cfg := smallConfig(t)
	neg := reward.Func(func(p, c, a string) float64 { return -exact(p, c, a) })
	ms := trainRewards(t, cfg, neg)
	if last := -meanReward(ms[len(ms)-5:]); last > 0.2 {
		t.Errorf("with the reward negated, the correct-answer rate is %.3f; want it pushed to ~0", last)
	}
}

func TestTrainerOutputs(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps = 3
	cfg.LoggingSteps = 1
	cfg.LogCompletions = true
	cfg.Beta = 0.04
	p := newPolicy(t)
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact},
		reward.Named{Name: "short", Weight: 0.5, Scorer: reward.Func(func(_, c, _ string) float64 {
			return 1 / float64(1+len(c))
		})})
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	tr.Progress = &progress
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	ms, err := grpo.ReadMetrics(filepath.Join(cfg.OutputDir, checkpoint.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 {
		t.Fatalf("%d metric lines, want 3", len(ms))
	}
	for _, key := range []string{"step", "loss", "reward", "reward_std", "rewards/exact/mean", "rewards/exact/std",
		"rewards/short/mean", "frac_reward_zero_std", "kl", "entropy", "clip_ratio/low_mean", "clip_ratio/high_mean",
		"clip_ratio/region_mean", "completions/mean_length", "completions/max_length", "completions/min_length",
		"completions/clipped_ratio", "learning_rate", "grad_norm", "step_time", "tokens_per_second", "num_tokens"} {
		if _, ok := ms[2][key]; !ok {
			t.Errorf("metrics lack %q", key)
		}
	}
	if steps, _ := grpo.Series(ms, "reward"); len(steps) != 3 || steps[2] != 3 {
		t.Errorf("Series steps = %v", steps)
	}
	// The progress lines (log_completions adds a table of completions after each).
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(progress.String()), "\n") {
		if strings.HasPrefix(l, "step ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 3 || strings.Count(progress.String(), "completions of step ") != 3 || !strings.HasPrefix(lines[0], "step 1/3 | reward ") || !strings.Contains(lines[0], "exact ") ||
		!strings.Contains(lines[0], "kl ") || !strings.Contains(lines[0], "tok/s") || !strings.Contains(lines[0], "ETA") {
		t.Errorf("progress lines:\n%s", progress.String())
	}
	data, err := os.ReadFile(filepath.Join(cfg.OutputDir, checkpoint.RolloutsFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 3*cfg.BatchSize {
		t.Errorf("rollouts.jsonl has %d lines, want %d", n, 3*cfg.BatchSize)
	}
	if !strings.Contains(string(data), `"advantage":`) || !strings.Contains(string(data), `"rewards":[`) {
		t.Errorf("rollout line lacks fields: %.200s", data)
	}
	if _, err := grpo.LatestCheckpoint(cfg.OutputDir); err != nil {
		t.Error(err)
	}
}

func TestNewTrainerErrors(t *testing.T) {
	p := newPolicy(t)
	cfg := grpo.DefaultConfig()
	if _, err := grpo.NewTrainer(p, cfg); err == nil || !strings.Contains(err.Error(), "no rewards") {
		t.Errorf("no rewards: err = %v", err)
	}
	cfg.NumGenerations = 3
	_, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "x", Scorer: exact})
	var fe *grpo.FieldError
	if !errors.As(err, &fe) || fe.Field != "BatchSize" {
		t.Errorf("bad config: err = %v", err)
	}
	cfg = grpo.DefaultConfig()
	_, err = grpo.NewTrainer(p, cfg, reward.Named{Name: "x", Scorer: exact}, reward.Named{Name: "x", Weight: 2, Scorer: exact},
		reward.Named{Scorer: exact})
	if err == nil || !strings.Contains(err.Error(), `rewards 0 and 1 are both named "x"`) || !strings.Contains(err.Error(), "reward 2 has no name") {
		t.Errorf("duplicate and empty reward names: err = %v", err)
	}
}
