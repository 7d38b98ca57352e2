package grpo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/loss"
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

// A row no reward applied to is TRL's unscorable completion: advantage 0,
// out of its group's baseline and of the logged reward and reward_std, and
// one warning per step on the Logger with the count and an example.
func TestTrainerUnscorableRows(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps = 3
	cfg.LogCompletions = true
	// Completions starting "say" are not scored: groups mix scored and
	// unscorable rows.
	notSay := reward.Func(func(_, c, answer string) float64 {
		if f := strings.Fields(c); len(f) > 0 && f[0] == "say" {
			return reward.NotApplicable()
		}
		return 1 + float64(len(c)) + exact("", c, answer) // never 0: a 0 baseline would hide the unscorable rows
	})
	var ms []grpo.Metrics
	tr, err := grpo.NewTrainer(newPolicy(t), cfg, reward.Named{Name: "notsay", Weight: 1, Scorer: notSay})
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	tr.Logger = slog.New(&rec)
	tr.OnStep = func(m grpo.Metrics) { ms = append(ms, m) }
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(cfg.OutputDir, checkpoint.RolloutsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type rollout struct {
		Step      int        `json:"step"`
		Rewards   []*float64 `json:"rewards"`
		Advantage float64    `json:"advantage"`
		Answer    string     `json:"answer"`
	}
	byStep := map[int][]rollout{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r rollout
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		byStep[r.Step] = append(byStep[r.Step], r)
	}
	unscoredSteps := 0
	for i, m := range ms {
		rows := byStep[i+1]
		var scored []float64
		unscored := 0
		for _, r := range rows {
			if r.Rewards[0] == nil {
				unscored++
				if r.Advantage != 0 {
					t.Errorf("step %d: unscorable row (answer %q) has advantage %g, want 0", i+1, r.Answer, r.Advantage)
				}
				continue
			}
			scored = append(scored, *r.Rewards[0])
		}
		mean, std := loss.NanMeanStd(scored)
		if !(math.IsNaN(mean) && math.IsNaN(m["reward"])) && math.Abs(m["reward"]-mean) > 1e-12 {
			t.Errorf("step %d: reward %g, want %g (the scored rows' mean)", i+1, m["reward"], mean)
		}
		if !(math.IsNaN(std) && math.IsNaN(m["reward_std"])) && math.Abs(m["reward_std"]-std) > 1e-12 {
			t.Errorf("step %d: reward_std %g, want %g", i+1, m["reward_std"], std)
		}
		if unscored > 0 {
			unscoredSteps++
		}
	}
	if unscoredSteps == 0 {
		t.Fatal("no unscorable row")
	}
	n := 0
	for _, r := range rec.records {
		if strings.Contains(r.Message, "no reward applied") {
			n++
		}
	}
	if n != unscoredSteps {
		t.Errorf("%d warnings for %d steps with unscorable rows", n, unscoredSteps)
	}
}

// Evaluate's Reward and RewardStd leave out the completions no reward
// applied to (TRL's eval_reward); NaN when none applied.
func TestEvaluateUnscorable(t *testing.T) {
	onlyCat := reward.Func(func(_, c, answer string) float64 {
		if answer != "cat" {
			return reward.NotApplicable()
		}
		return 2
	})
	data := sayDataset()
	res, err := grpo.Evaluate(context.Background(), newPolicy(t), data, []reward.Named{{Name: "cat", Weight: 1, Scorer: onlyCat}}, grpo.EvalOptions{MaxCompletionLength: 2, Generations: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reward != 2 || res.RewardStd != 0 {
		t.Errorf("Reward %g ± %g, want 2 ± 0 (the two cat completions)", res.Reward, res.RewardStd)
	}
	none := reward.Func(func(_, _, _ string) float64 { return reward.NotApplicable() })
	res, err = grpo.Evaluate(context.Background(), newPolicy(t), data, []reward.Named{{Name: "none", Weight: 1, Scorer: none}}, grpo.EvalOptions{MaxCompletionLength: 2})
	if err != nil || !math.IsNaN(res.Reward) || !math.IsNaN(res.RewardStd) {
		t.Errorf("no reward applied: %g ± %g, %v; want NaN", res.Reward, res.RewardStd, err)
	}
}
