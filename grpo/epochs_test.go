package grpo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/reward"
)

func TestTrainSteps(t *testing.T) {
	base := grpo.DefaultConfig()
	base.NumGenerations, base.BatchSize = 4, 8 // 2 prompts per step
	tests := []struct {
		name     string
		maxSteps int
		epochs   float64
		iters    int
		n        int
		want     int
		accum    int // 0: 1
		spg      int // steps_per_generation; 0: accum
	}{
		{"max_steps wins over epochs", 7, 3, 1, 10, 7, 0, 0},
		{"HF default 3 epochs", 0, 3, 1, 10, 15, 0, 0},
		{"one epoch", 0, 1, 1, 10, 5, 0, 0},
		{"fractional epochs round up", 0, 0.5, 1, 10, 3, 0, 0},
		{"partial last batch dropped", 0, 1, 1, 11, 5, 0, 0},
		{"num_iterations steps per batch", 0, 2, 3, 10, 30, 0, 0},
		{"dataset smaller than a batch", 0, 1, 1, 1, 1, 0, 0},
		{"tiny fraction still one step", 0, 0.01, 1, 10, 1, 0, 0},
		{"exact product does not round up", 0, 0.1, 1, 60, 3, 0, 0},
		// TRL 1.10: RepeatSampler yields ⌊n / prompts per generation⌋
		// batches, each num_iterations × steps_per_generation times; HF
		// takes len(dataloader) // gradient_accumulation_steps per epoch.
		{"steps_per_generation 2: 4-prompt batches, 2 steps each", 0, 1, 1, 10, 4, 1, 2},
		{"steps_per_generation 2, num_iterations 2", 0, 1, 2, 10, 8, 1, 2},
		{"steps_per_generation 4 under accumulation 2", 0, 1, 1, 17, 4, 2, 4},
		{"generation batch of half a step, odd count rounds down", 0, 1, 1, 10, 2, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			c.MaxSteps, c.NumTrainEpochs, c.NumIterations = tt.maxSteps, tt.epochs, tt.iters
			c.GradientAccumulationSteps, c.StepsPerGeneration = max(1, tt.accum), tt.spg
			if got := c.TrainSteps(tt.n); got != tt.want {
				t.Errorf("TrainSteps(%d) = %d, want %d", tt.n, got, tt.want)
			}
		})
	}
}

func TestValidateRunLength(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(c *grpo.Config)
		field string // "" for valid
	}{
		{"defaults", func(c *grpo.Config) {}, ""},
		{"no epochs, no max_steps", func(c *grpo.Config) { c.NumTrainEpochs, c.MaxSteps = 0, 0 }, "NumTrainEpochs"},
		{"no epochs with max_steps", func(c *grpo.Config) { c.NumTrainEpochs, c.MaxSteps = 0, 5 }, ""},
		{"negative epochs", func(c *grpo.Config) { c.NumTrainEpochs = -1 }, "NumTrainEpochs"},
		{"NaN epochs", func(c *grpo.Config) { c.NumTrainEpochs = math.NaN() }, "NumTrainEpochs"},
		{"eval_steps without strategy", func(c *grpo.Config) { c.EvalSteps = 5 }, "EvalSteps"},
		{"negative eval_steps", func(c *grpo.Config) { c.EvalStrategy, c.EvalSteps = grpo.EvalByStep, -1 }, "EvalSteps"},
		{"steps, eval_steps from logging_steps", func(c *grpo.Config) { c.EvalStrategy = grpo.EvalByStep }, ""},
		{"steps, no interval", func(c *grpo.Config) { c.EvalStrategy, c.LoggingSteps = grpo.EvalByStep, 0 }, "EvalSteps"},
		{"epoch strategy", func(c *grpo.Config) { c.EvalStrategy = "epoch" }, "EvalStrategy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := grpo.DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *grpo.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("Validate = %v, want a FieldError on %s", err, tt.field)
			}
		})
	}
}

// TestTrainNumTrainEpochs trains with max_steps unset and two epochs:
// the run takes 2 × 2 steps over the four prompts and draws each prompt
// exactly twice.
func TestTrainNumTrainEpochs(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.NumTrainEpochs = 0, 2
	p := newPolicy(t)
	drawn := map[string]int{}
	p.Script = func(ex dataset.Example, j int) string {
		if j == 0 {
			drawn[ex.Answer]++
		}
		return ex.Answer
	}
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	tr.OnStep = func(grpo.Metrics) { steps++ }
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	if steps != 4 || tr.Step() != 4 {
		t.Errorf("%d steps (Step() = %d), want 4 (2 epochs × 4 prompts / 2 prompts per step)", steps, tr.Step())
	}
	for _, w := range words[1:] {
		if drawn[w] != 2 {
			t.Errorf("prompt %q drawn %d times, want 2 (once per epoch): %v", w, drawn[w], drawn)
		}
	}
}

// TestTrainEvalSteps evaluates a three-prompt eval set every 2 steps of
// a 5-step run with a policy that answers only "say cat" right: the eval
// lines in metrics.jsonl are at steps 2 and 4, with eval_reward 1/3 and
// the sample standard deviation of (1, 0, 0), √(1/3).
func TestTrainEvalSteps(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps = 5
	cfg.EvalStrategy, cfg.EvalSteps = grpo.EvalByStep, 2
	p := newPolicy(t)
	p.Script = func(ex dataset.Example, j int) string {
		if ex.Answer == "cat" || (!strings.HasPrefix(ex.Prompt, "eval") && j%2 == 0) {
			return ex.Answer
		}
		return "say"
	}
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Train(context.Background(), sayDataset()); err == nil || !strings.Contains(err.Error(), "EvalDataset") {
		t.Fatalf("Train without EvalDataset = %v, want an error naming EvalDataset", err)
	}
	tr.EvalDataset = dataset.SliceDataset{
		{Prompt: "eval cat", Answer: "cat"}, {Prompt: "eval dog", Answer: "dog"}, {Prompt: "eval fish", Answer: "fish"},
	}
	var evals []grpo.Metrics
	tr.OnEval = func(m grpo.Metrics) { evals = append(evals, m) }
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(cfg.OutputDir, checkpoint.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evalSteps []float64
	trainLines := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]float64
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		r, ok := m["eval_reward"]
		if !ok {
			trainLines++
			continue
		}
		evalSteps = append(evalSteps, m["step"])
		if math.Abs(r-1.0/3) > 1e-12 || math.Abs(m["eval_rewards/exact/mean"]-1.0/3) > 1e-12 {
			t.Errorf("step %v: eval_reward %v, eval_rewards/exact/mean %v, want 1/3", m["step"], r, m["eval_rewards/exact/mean"])
		}
		if math.Abs(m["eval_reward_std"]-math.Sqrt(1.0/3)) > 1e-12 {
			t.Errorf("step %v: eval_reward_std %v, want √(1/3)", m["step"], m["eval_reward_std"])
		}
		if _, ok := m["loss"]; ok {
			t.Errorf("step %v: eval line carries training key loss", m["step"])
		}
	}
	if len(evalSteps) != 2 || evalSteps[0] != 2 || evalSteps[1] != 4 {
		t.Errorf("eval lines at steps %v, want [2 4]", evalSteps)
	}
	if trainLines != 5 {
		t.Errorf("%d training lines, want 5", trainLines)
	}
	if len(evals) != 2 {
		t.Errorf("OnEval called %d times, want 2", len(evals))
	}
}

// TestNumGenerationsEval: with num_generations_eval N each eval prompt gets
// N completions (TRL's eval), so a policy right only on its first
// completion scores 1/N; without it one greedy completion scores 1.
func TestNumGenerationsEval(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want float64
	}{{0, 1}, {3, 1.0 / 3}, {4, 1.0 / 4}} {
		cfg := smallConfig(t)
		cfg.MaxSteps = 2
		cfg.EvalStrategy, cfg.EvalSteps, cfg.NumGenerationsEval = grpo.EvalByStep, 2, tc.n
		p := newPolicy(t)
		p.Script = func(ex dataset.Example, j int) string {
			if j == 0 {
				return ex.Answer
			}
			return "say"
		}
		tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
		if err != nil {
			t.Fatal(err)
		}
		tr.EvalDataset = dataset.SliceDataset{{Prompt: "eval cat", Answer: "cat"}, {Prompt: "eval dog", Answer: "dog"}}
		var evals []grpo.Metrics
		tr.OnEval = func(m grpo.Metrics) { evals = append(evals, m) }
		if err := tr.Train(context.Background(), sayDataset()); err != nil {
			t.Fatal(err)
		}
		if len(evals) != 1 || math.Abs(evals[0]["eval_reward"]-tc.want) > 1e-12 {
			t.Errorf("num_generations_eval %d: evals %v, want eval_reward %v", tc.n, evals, tc.want)
		}
	}
}
