package grpo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/reward"
)

// A reward that applies only to some prompts trains, is null in
// rollouts.jsonl where it did not apply, and its logged mean is over the
// rows it applied to (TRL's nanmean).
func TestTrainerNotApplicableReward(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps = 2
	cfg.LogCompletions = true
	onlyCat := reward.Func(func(_, c, answer string) float64 {
		if answer != "cat" {
			return reward.NotApplicable()
		}
		return exact("", c, answer)
	})
	var ms []grpo.Metrics
	tr, err := grpo.NewTrainer(newPolicy(t), cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact},
		reward.Named{Name: "cat", Weight: 1, Scorer: onlyCat})
	if err != nil {
		t.Fatal(err)
	}
	tr.OnStep = func(m grpo.Metrics) { ms = append(ms, m) }
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(cfg.OutputDir, checkpoint.RolloutsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, n, nulls := map[int]float64{}, map[int]float64{}, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			Step    int        `json:"step"`
			Rewards []*float64 `json:"rewards"`
			Reward  float64    `json:"reward"`
			Answer  string     `json:"answer"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if (r.Rewards[1] == nil) != (r.Answer != "cat") {
			t.Errorf("answer %q: rewards %v", r.Answer, r.Rewards)
		}
		total := *r.Rewards[0]
		if r.Rewards[1] == nil {
			nulls++
		} else {
			total += *r.Rewards[1]
			sum[r.Step] += *r.Rewards[1]
			n[r.Step]++
		}
		if r.Reward != total {
			t.Errorf("reward %g, want %g (the rewards that applied)", r.Reward, total)
		}
	}
	if nulls == 0 {
		t.Fatal("no row without the cat reward")
	}
	for i, m := range ms {
		step := i + 1
		got, ok := m["rewards/cat/mean"]
		if n[step] == 0 {
			if ok && !math.IsNaN(got) {
				t.Errorf("step %d: rewards/cat/mean %g with no cat row", step, got)
			}
			continue
		}
		if want := sum[step] / n[step]; math.Abs(got-want) > 1e-12 {
			t.Errorf("step %d: rewards/cat/mean %g, want %g over %g rows", step, got, want, n[step])
		}
	}
}
