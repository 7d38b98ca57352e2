package grpo_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/reward"
)

// countingPolicy counts Generate calls.
type countingPolicy struct {
	grpo.Policy
	calls int
}

func (p *countingPolicy) Generate(ctx context.Context, prompts []dataset.Example, n int, opts grpo.GenerateOptions) ([]grpo.Completion, error) {
	p.calls++
	return p.Policy.Generate(ctx, prompts, n, opts)
}

func TestGenerateCallsPerGenerationBatch(t *testing.T) {
	for _, c := range []struct {
		accum, spg, gbs, μ, steps, calls int
	}{
		{1, 0, 0, 1, 4, 4},  // default: a generation per step
		{1, 3, 0, 1, 6, 2},  // one generation per 3 steps
		{1, 0, 24, 1, 6, 2}, // the same by generation_batch_size
		{1, 3, 0, 2, 12, 2}, // reused μ = 2 times: one per 6 steps
		{2, 4, 0, 1, 4, 2},  // 4 micro-batches per generation, 2 per step
		{2, 1, 0, 1, 3, 6},  // generation_batch_size 8 < 16 a step: 2 per step
	} {
		t.Run(fmt.Sprintf("accum%d-spg%d-gbs%d-mu%d", c.accum, c.spg, c.gbs, c.μ), func(t *testing.T) {
			cfg := grpo.DefaultConfig()
			cfg.NumGenerations, cfg.BatchSize = 4, 8
			cfg.MaxCompletionLength, cfg.MaxPromptLength = 3, 8
			cfg.GradientAccumulationSteps, cfg.StepsPerGeneration, cfg.GenerationBatchSize, cfg.NumIterations = c.accum, c.spg, c.gbs, c.μ
			cfg.MaxSteps, cfg.LoggingSteps, cfg.LearningRate = c.steps, 0, 0.1
			p := &countingPolicy{Policy: newPolicy(t)}
			ms := trainOn(t, p, cfg, sayDataset(), reward.Named{Name: "len", Weight: 1, Scorer: reward.Func(func(_, comp, _ string) float64 {
				return float64(len(comp))
			})})
			if p.calls != c.calls {
				t.Errorf("%d Generate calls for %d steps, want %d", p.calls, c.steps, c.calls)
			}
			if want := float64(cfg.EffectiveGenerationBatchSize()); ms[0]["rollouts"] != want {
				t.Errorf("rollouts %v, want generation_batch_size %v", ms[0]["rollouts"], want)
			}
		})
	}
}

// TestResumeMidGenerationBatch kills runs whose generation batch feeds 3
// optimizer steps, reused twice (steps_per_generation 3, num_iterations
// 2: one generation per 6 steps), inside that batch, resumes them in a
// fresh trainer and policy, and checks that every metric (timings aside)
// and the final weights equal those of an uninterrupted run bit for bit.
func TestResumeMidGenerationBatch(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.WarmupSteps, cfg.LRSchedulerType = 8, 2, grpo.ScheduleLinear
	cfg.BatchSize, cfg.StepsPerGeneration, cfg.NumIterations = 4, 3, 2
	cfg.Beta, cfg.EpsilonHigh, cfg.SaveSteps = 0.04, 0.28, 0
	cfg.OutputDir = ""
	want, wantMs, err := run(t, cfg, false, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, stop := range []int{2, 4} {
		t.Run(fmt.Sprintf("stop after %d", stop), func(t *testing.T) {
			cfg := cfg
			cfg.OutputDir = t.TempDir()
			if _, _, err := run(t, cfg, false, stop); !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled run returned %v, want context.Canceled", err)
			}
			ckpt := filepath.Join(cfg.OutputDir, fmt.Sprintf("checkpoint-%d", stop))
			if _, err := os.Stat(filepath.Join(ckpt, "rollouts.gob")); err != nil {
				t.Fatalf("checkpoint inside a generation batch has no rollouts: %v", err)
			}
			got, gotMs, err := run(t, cfg, true, -1)
			if err != nil {
				t.Fatal(err)
			}
			if len(gotMs) != cfg.MaxSteps-stop {
				t.Fatalf("resumed run took %d steps, want %d", len(gotMs), cfg.MaxSteps-stop)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("weight %d = %v after resume, %v uninterrupted", i, got[i], want[i])
				}
			}
			for i, m := range gotMs {
				w := wantMs[stop+i]
				for k, v := range w {
					if strings.Contains(k, "time") || strings.HasPrefix(k, "timing/") || k == "tokens_per_second" {
						continue
					}
					if math.Float64bits(m[k]) != math.Float64bits(v) {
						t.Errorf("step %v: %s = %v resumed, %v uninterrupted", w["step"], k, m[k], v)
					}
				}
			}
		})
	}
}

// TestTrainEnvGenerationBatch plays two-turn episodes with
// steps_per_generation 2: every generation batch holds both turns of its
// episodes (2 × 8 completions each), is played once per 2 steps, and
// feeds each step half its micro-batches. A layout whose steps straddle
// generation batches is refused for an Env.
func TestTrainEnvGenerationBatch(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.StepsPerGeneration = 4, 2
	p := &countingPolicy{Policy: newPolicy(t)}
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	var ms []grpo.Metrics
	tr.OnStep = func(m grpo.Metrics) { ms = append(ms, m) }
	if err := tr.TrainEnv(context.Background(), relayEnv{}); err != nil {
		t.Fatal(err)
	}
	if p.calls != 4 { // 2 generation batches × 2 turns
		t.Errorf("%d Generate calls, want 4", p.calls)
	}
	for i, m := range ms {
		if m["rollouts"] != 32 {
			t.Errorf("step %d: %v rollouts, want 32 (4 episodes × 4 completions × 2 turns)", i+1, m["rollouts"])
		}
	}

	cfg.GradientAccumulationSteps, cfg.BatchSize, cfg.StepsPerGeneration = 2, 4, 3
	tr, err = grpo.NewTrainer(newPolicy(t), cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.TrainEnv(context.Background(), relayEnv{}); err == nil || !strings.Contains(err.Error(), "multiple of GradientAccumulationSteps") {
		t.Errorf("steps_per_generation 3 with accumulation 2 on an Env: err = %v", err)
	}
}

// TestGenerationBatchLossSplits trains one generation batch of 12
// completions at learning rate 0 two ways: as one step of 3 accumulated
// micro-batches, and with steps_per_generation 3 as three steps of one
// micro-batch each. Both generate the same batch (same seed and prompts).
// dapo and cispo divide by its token count times gradient_accumulation_steps
// / steps_per_generation (TRL 1.16), so each of the three steps carries its
// third of the batch at the scale of a whole step: their losses add up to
// three times the single step's. (No entropy bonus: since TRL 1.16 it is a
// mean over each micro-batch's tokens, which depends on how the rows fall
// into micro-batches.)
func TestGenerationBatchLossSplits(t *testing.T) {
	for _, lt := range []loss.Type{loss.DAPO, loss.CISPO} {
		t.Run(string(lt), func(t *testing.T) {
			cfg := smallConfig(t)
			cfg.BatchSize, cfg.LearningRate, cfg.LossType = 4, 0, lt
			losses := func(accum, spg, steps int) []float64 {
				c := cfg
				c.GradientAccumulationSteps, c.StepsPerGeneration, c.MaxSteps, c.OutputDir = accum, spg, steps, ""
				p := &countingPolicy{Policy: newPolicy(t)}
				tr, err := grpo.NewTrainer(p, c, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
				if err != nil {
					t.Fatal(err)
				}
				var out []float64
				tr.OnStep = func(m grpo.Metrics) { out = append(out, m["loss"]) }
				if err := tr.Train(context.Background(), sayDataset()); err != nil {
					t.Fatal(err)
				}
				if p.calls != 1 {
					t.Fatalf("accumulation %d, steps_per_generation %d: %d Generate calls, want 1", accum, spg, p.calls)
				}
				return out
			}
			whole := losses(3, 0, 1)
			split := losses(1, 3, 3)
			sum := split[0] + split[1] + split[2]
			if math.Abs(sum-3*whole[0]) > 1e-6+1e-5*math.Abs(3*whole[0]) || whole[0] == 0 {
				t.Errorf("steps of one generation batch: losses %v sum to %.8g; the batch as one step: %.8g (× 3 = %.8g)", split, sum, whole[0], 3*whole[0])
			}
			for i, l := range split {
				if math.Abs(l) < 1e-3*math.Abs(whole[0]) {
					t.Errorf("step %d loss %v: every step should carry a share", i+1, l)
				}
			}
		})
	}
}
