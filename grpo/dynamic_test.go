package grpo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/reward"
)

// TestDynamicSamplingRefills scripts a policy whose answers to "say cat"
// and "say dog" are all right (zero reward spread) while the answers to
// "say fish" and "say bird" are half right: with dynamic sampling every
// batch must be refilled with informative groups only, and the metrics
// must count the groups drawn and dropped.
func TestDynamicSamplingRefills(t *testing.T) {
	// steps_per_generation 2: each refilled generation batch feeds 2 steps.
	for _, spg := range []int{0, 2} {
		t.Run(fmt.Sprintf("steps_per_generation %d", spg), func(t *testing.T) {
			cfg := smallConfig(t)
			cfg.MaxSteps = 4
			cfg.DynamicSampling = true
			cfg.ShuffleDataset = false // the first batch is "say cat", "say dog": both tied
			cfg.LogCompletions = true
			cfg.StepsPerGeneration = spg
			p := newPolicy(t)
			p.Script = func(ex dataset.Example, j int) string {
				if ex.Answer == "cat" || ex.Answer == "dog" || j%2 == 0 {
					return ex.Answer
				}
				return "say"
			}
			ms := trainOn(t, p, cfg, sayDataset(), reward.Named{Name: "exact", Weight: 1, Scorer: exact})
			if len(ms) != cfg.MaxSteps {
				t.Fatalf("%d steps, want %d", len(ms), cfg.MaxSteps)
			}
			first := ms[0]
			if first["dynamic_sampling/groups_dropped"] < 2 || first["dynamic_sampling/groups_drawn"] < 4 || first["dynamic_sampling/rounds"] < 1 {
				t.Errorf("step 1: drawn %v, dropped %v, rounds %v; want ≥ 4 drawn, ≥ 2 dropped (say cat, say dog), ≥ 1 round",
					first["dynamic_sampling/groups_drawn"], first["dynamic_sampling/groups_dropped"], first["dynamic_sampling/rounds"])
			}
			for i, m := range ms {
				if m["frac_reward_zero_std"] != 0 {
					t.Errorf("step %d: frac_reward_zero_std = %v, want 0 (only informative groups)", i+1, m["frac_reward_zero_std"])
				}
				if m["rollouts"] != float64(cfg.EffectiveGenerationBatchSize()) {
					t.Errorf("step %d: %v rollouts, want %d", i+1, m["rollouts"], cfg.EffectiveGenerationBatchSize())
				}
				if got, want := m["dynamic_sampling/groups_drawn"]-m["dynamic_sampling/groups_dropped"], float64(cfg.PromptsPerGeneration()); got < want {
					t.Errorf("step %d: %v informative groups drawn, want ≥ %v", i+1, got, want)
				}
			}
			// Every group the trainer trained on (rollouts.jsonl) has reward spread.
			data, err := os.ReadFile(filepath.Join(cfg.OutputDir, checkpoint.RolloutsFile))
			if err != nil {
				t.Fatal(err)
			}
			var rows []struct {
				Step   int     `json:"step"`
				Prompt string  `json:"prompt"`
				Reward float64 `json:"reward"`
			}
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				var r struct {
					Step   int     `json:"step"`
					Prompt string  `json:"prompt"`
					Reward float64 `json:"reward"`
				}
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatal(err)
				}
				rows = append(rows, r)
			}
			if len(rows) != cfg.MaxSteps*cfg.BatchSize {
				t.Fatalf("%d rollouts logged, want %d", len(rows), cfg.MaxSteps*cfg.BatchSize)
			}
			g := cfg.NumGenerations
			for i := 0; i < len(rows); i += g {
				lo, hi := rows[i].Reward, rows[i].Reward
				for _, r := range rows[i : i+g] {
					lo, hi = min(lo, r.Reward), max(hi, r.Reward)
				}
				if lo == hi {
					t.Errorf("step %d trains on the tied group %q (rewards all %v)", rows[i].Step, rows[i].Prompt, lo)
				}
			}
		})
	}
}

// TestDynamicSamplingBounded gives only tied groups: the extra rounds stop
// at DynamicSamplingMaxRounds and the batch keeps its size.
func TestDynamicSamplingBounded(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps = 1
	cfg.DynamicSampling = true
	cfg.DynamicSamplingMaxRounds = 3
	p := newPolicy(t)
	p.Script = func(ex dataset.Example, j int) string { return ex.Answer }
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	var m grpo.Metrics
	tr.OnStep = func(x grpo.Metrics) { m = x }
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	if m["dynamic_sampling/rounds"] != 3 || m["rollouts"] != float64(cfg.BatchSize) || m["frac_reward_zero_std"] != 1 {
		t.Errorf("rounds %v, rollouts %v, frac_reward_zero_std %v; want 3, %d, 1", m["dynamic_sampling/rounds"], m["rollouts"], m["frac_reward_zero_std"], cfg.BatchSize)
	}
	if p.Calls != 4 {
		t.Errorf("%d Generate calls, want 4 (the batch and 3 extra rounds)", p.Calls)
	}
}
