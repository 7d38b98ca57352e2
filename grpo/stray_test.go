package grpo_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/reward"
)

// TestStrayRewardCalls: a reward that never returns is not called again
// once reward.DefaultMaxStray of its calls are running past their timeout
// (calls already started by other workers at that moment may add to them);
// every sample counts as a failure and the metrics report the calls still
// running. Before, each
// sample of each step started a call that hung (a goroutine, and a core if
// it spins, per sample).
func TestStrayRewardCalls(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps = 3
	cfg.RewardTimeout = 0.001 // seconds
	release := make(chan struct{})
	defer close(release)
	var calls atomic.Int64
	hang := reward.ScorerFunc(func(reward.Sample) float64 {
		calls.Add(1)
		<-release
		return 1
	})
	tr, err := grpo.NewTrainer(newPolicy(t), cfg, reward.Named{Name: "hang", Weight: 1, Scorer: hang})
	if err != nil {
		t.Fatal(err)
	}
	var last grpo.Metrics
	var afterFirst int64
	tr.OnStep = func(m grpo.Metrics) {
		last = m
		if m["step"] == 1 {
			afterFirst = calls.Load()
		}
		if m["rewards/hang/failures"] != float64(cfg.BatchSize) {
			t.Errorf("step %v: %v failures of %d samples", m["step"], m["rewards/hang/failures"], cfg.BatchSize)
		}
	}
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != afterFirst || n < int64(reward.DefaultMaxStray) || n > int64(reward.DefaultMaxStray+runtime.GOMAXPROCS(0)-1) {
		t.Errorf("the hanging reward was called %d times (%d in step 1), want %d to %d, all in step 1",
			n, afterFirst, reward.DefaultMaxStray, reward.DefaultMaxStray+runtime.GOMAXPROCS(0)-1)
	}
	if last["rewards/hang/stray"] != float64(calls.Load()) {
		t.Errorf("stray metric %v, want %d", last["rewards/hang/stray"], calls.Load())
	}
}
