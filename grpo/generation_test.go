package grpo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/reward"
)

// TestStepScheduleTRLFigure checks the micro-batch indexing against the
// figure in TRL 1.10's GRPOTrainer._get_train_sampler (grad_accum 2,
// steps_per_generation 4: a generation every 4 micro-batches, whose
// slices feed two optimizer steps) and against TRL's _prepare_inputs rule
// for other layouts: micro-batch s uses slice s mod S of generation batch
// ⌊s / (S·μ)⌋.
func TestStepScheduleTRLFigure(t *testing.T) {
	type ref = microRef
	for _, c := range []struct {
		name          string
		accum, spg, μ int
		steps         [][]ref // per optimizer step
	}{
		{"figure: accum 2, spg 4", 2, 4, 1, [][]ref{
			{{0, 0, true}, {0, 1, false}},
			{{0, 2, false}, {0, 3, false}},
			{{1, 0, true}, {1, 1, false}},
			{{1, 2, false}, {1, 3, false}},
		}},
		{"spg 3, μ 2", 1, 3, 2, [][]ref{
			{{0, 0, true}}, {{0, 1, false}}, {{0, 2, false}},
			{{0, 0, false}}, {{0, 1, false}}, {{0, 2, false}},
			{{1, 0, true}},
		}},
		{"default spg = accum 2, μ 2", 2, 0, 2, [][]ref{
			{{0, 0, true}, {0, 1, false}},
			{{0, 0, false}, {0, 1, false}},
			{{1, 0, true}, {1, 1, false}},
		}},
		{"spg 3 across steps of accum 2", 2, 3, 1, [][]ref{
			{{0, 0, true}, {0, 1, false}},
			{{0, 2, false}, {1, 0, true}},
			{{1, 1, false}, {1, 2, false}},
		}},
		{"spg 1 under accum 2", 2, 1, 1, [][]ref{
			{{0, 0, true}, {1, 0, true}},
			{{2, 0, true}, {3, 0, true}},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.GradientAccumulationSteps, cfg.StepsPerGeneration, cfg.NumIterations = c.accum, c.spg, c.μ
			for i, want := range c.steps {
				if got := cfg.stepSchedule(i); !slices.Equal(got, want) {
					t.Errorf("step %d: %v, want %v", i, got, want)
				}
				if got, want := cfg.midGeneration(i), !want[0].First; got != want {
					t.Errorf("step %d: midGeneration %v, want %v", i, got, want)
				}
			}
		})
	}
}

// TestNeedsOldLogProbs follows TRL 1.10's condition for computing
// old_per_token_logps at generation: gradient_accumulation_steps %
// (steps_per_generation × num_iterations) != 0.
func TestNeedsOldLogProbs(t *testing.T) {
	for _, c := range []struct {
		accum, spg, μ int
		want          bool
	}{
		{1, 0, 1, false}, {4, 0, 1, false}, {1, 0, 2, true}, {4, 0, 2, true},
		{1, 2, 1, true}, {2, 4, 1, true}, {4, 2, 1, false}, {4, 1, 1, false}, {2, 3, 1, true}, {4, 2, 2, false},
	} {
		cfg := DefaultConfig()
		cfg.GradientAccumulationSteps, cfg.StepsPerGeneration, cfg.NumIterations = c.accum, c.spg, c.μ
		if got := cfg.needsOldLogProbs(); got != c.want {
			t.Errorf("accum %d, spg %d, μ %d: needsOldLogProbs %v, want %v", c.accum, c.spg, c.μ, got, c.want)
		}
	}
}

// goldenSource yields copies of fixed scored rows as every generation
// batch.
type goldenSource struct{ rows []*row }

// size counts each prompt once (rows come in groups of the same prompt),
// as a dataset of the prompts would, for the epoch metric.
func (s goldenSource) size() int {
	n := 0
	for i, r := range s.rows {
		if i == 0 || !slices.Equal(r.PromptIDs, s.rows[i-1].PromptIDs) {
			n++
		}
	}
	return n
}

func (s goldenSource) rollouts(_ context.Context, _ *Trainer, _ int, _ *rewardTally) ([]*row, error) {
	out := make([]*row, len(s.rows))
	for i, r := range s.rows {
		c := *r
		out[i] = &c
	}
	return out, nil
}

// TestGenerationBatchGoldenTRL110 feeds the six TRL 1.10 golden rows (two
// groups of 3) as one generation batch with per_device_train_batch_size 2
// and steps_per_generation 3, so three optimizer steps share it. It checks,
// against reference numbers only:
//   - the advantages of every golden advantage set (group, batch and no
//     scaling, both aggregations) equal TRL's over the whole batch;
//   - the three steps see disjoint slices of 2 rows that cover the batch;
//   - each step's loss (at the golden weights, old log-probs taken at
//     generation) is the golden per-token losses of its rows times TRL's
//     normalizer: dapo/cispo/vespo ÷ (num_items_in_batch of the whole
//     generation batch (37) × gradient_accumulation_steps 1 ÷
//     steps_per_generation 3), as TRL 1.16 rescales it (1.10 divided by
//     37 alone), grpo ÷ (row tokens × 2 rows), bnpo ÷ the
//     slice's tokens, dr_grpo ÷ (2 rows × max_completion_length 8).
func TestGenerationBatchGoldenTRL110(t *testing.T) {
	g, ts := loadTRL110(t)
	pol := goldenLoRAPolicy(t, nil)
	in := g.Inputs
	c := in.MaxCompletionLength
	golden := maskedRows(in.PromptIDs, in.PromptMask, in.CompletionIDs, in.CompletionMask)
	// rowOf finds the golden row of row b of a micro-batch by its tokens.
	rowOf := func(t *testing.T, mb *microBatch, b int) int {
		l := mb.P + mb.C
		found := -1
		for i, r := range golden {
			toks := mb.Tokens[b*l : (b+1)*l]
			if slices.Equal(toks[mb.P-len(r.PromptIDs):mb.P], r.PromptIDs) && slices.Equal(toks[mb.P:mb.P+len(r.IDs)], r.IDs) &&
				(len(r.IDs) == mb.C || mb.Mask[b*l+mb.P+len(r.IDs)] == 0) {
				if found >= 0 {
					t.Fatalf("micro-batch row %d matches golden rows %d and %d", b, found, i)
				}
				found = i
			}
		}
		if found < 0 {
			t.Fatalf("micro-batch row %d matches no golden row", b)
		}
		return found
	}
	zero := reward.Func(func(_, _, _ string) float64 { return 0 })
	newTrainer := func(t *testing.T, cfg Config, cols []string, weights []float64) (*Trainer, *rolloutBatch) {
		t.Helper()
		cfg.NumGenerations, cfg.BatchSize, cfg.StepsPerGeneration = in.NumGenerations, 2, 3
		cfg.MaxCompletionLength, cfg.MaxPromptLength = c, 8
		cfg.RewardWeights = weights
		var named []reward.Named
		for k := range cols {
			named = append(named, reward.Named{Name: fmt.Sprintf("func%d", k), Weight: 1, Scorer: zero})
		}
		tr, err := NewTrainer(pol, cfg, named...)
		if err != nil {
			t.Fatal(err)
		}
		rows := make([]*row, len(golden))
		for i, r := range golden {
			cp := *r
			cp.Rewards = g.rewardScores(cols)[i]
			for k, w := range weights {
				cp.Reward += w * cp.Rewards[k]
			}
			rows[i] = &cp
		}
		buf, err := tr.makeRollouts(context.Background(), goldenSource{rows}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return tr, buf
	}

	for name, set := range g.AdvantageSets {
		t.Run("advantages/"+name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ScaleRewards, cfg.MultiObjectiveAggregation = set.Params.ScaleRewards, set.Params.Aggregation
			_, buf := newTrainer(t, cfg, set.Params.RewardColumns, set.Params.RewardWeights)
			for i, r := range buf.Rows {
				if !closeTo(r.Advantage, nanOr(set.Advantages[i]), 1e-6, 0) {
					t.Errorf("row %d advantage %.8g, TRL over the generation batch %.8g", i, r.Advantage, nanOr(set.Advantages[i]))
				}
			}
			for key, want := range set.Metrics {
				if got, ok := buf.Metrics[key]; !ok || !closeTo(got, want, 1e-6, 0) {
					t.Errorf("%s = %.8g (present %v), golden %.8g", key, got, ok, want)
				}
			}
		})
	}

	for _, name := range []string{"dapo-on-nokl", "dapo-on-kl", "cispo-on-kl", "vespo-on-kl", "grpo-on-nokl", "bnpo-on-kl", "dr_grpo-on-nokl"} {
		t.Run("loss/"+name, func(t *testing.T) {
			v := g.Variants[name]
			cfg, p := v.config(t)
			set := g.AdvantageSets[p.Advantages]
			cfg.ScaleRewards, cfg.MultiObjectiveAggregation = set.Params.ScaleRewards, set.Params.Aggregation
			tr, buf := newTrainer(t, cfg, set.Params.RewardColumns, set.Params.RewardWeights)
			if !tr.withOld() {
				t.Fatal("steps_per_generation 3 > accumulation 1 must take old log-probs at generation")
			}
			exec, err := mlctx.NewExecAny(pol.Backend(), pol.Context(), func(ctx *mlctx.Context, in []*Node) *Node {
				loss, _, _ := tr.lossGraph(ctx.Checked(false), in)
				return loss
			})
			if err != nil {
				t.Fatal(err)
			}
			perToken := ts[name+".per_token_loss"]
			seen := map[int]bool{}
			for step := range 3 {
				var got, want float64
				for _, ref := range tr.cfg.stepSchedule(step) {
					if ref.Batch != 0 {
						t.Fatalf("step %d uses generation batch %d, want 0", step, ref.Batch)
					}
					for _, mb := range buf.slice(ref.Slice, 3) {
						if mb.Rows != 2 {
							t.Fatalf("step %d: micro-batch of %d rows, want 2", step, mb.Rows)
						}
						outs, err := exec.Exec(mb.withAllowed(mb.inputs(tr.withOld(), tr.withRef()), tr.constraint)...)
						if err != nil {
							t.Fatal(err)
						}
						got += float64(tensors.ToScalar[float32](outs[0]))
						sliceTokens := 0.0
						for b := range mb.Rows {
							sliceTokens += float64(len(golden[rowOf(t, mb, b)].IDs))
						}
						for b := range mb.Rows {
							i := rowOf(t, mb, b)
							if seen[i] {
								t.Errorf("golden row %d trained twice", i)
							}
							seen[i] = true
							n := float64(len(golden[i].IDs))
							for j := range golden[i].IDs {
								l := float64(perToken.Data[i*c+j])
								switch cfg.LossType {
								case loss.DAPO, loss.CISPO, loss.VESPO:
									want += l / (float64(in.NumItemsInBatch) / 3)
								case loss.GRPO:
									want += l / (n * 2)
								case loss.BNPO:
									want += l / sliceTokens
								case loss.DrGRPO:
									want += l / (2 * float64(c))
								default:
									t.Fatalf("no normalizer for %s", cfg.LossType)
								}
							}
						}
					}
				}
				if !closeTo(got, want, 2e-5, 1e-4) {
					t.Errorf("step %d loss %.8g, golden rows × TRL normalizer %.8g", step, got, want)
				}
			}
			if len(seen) != len(golden) {
				t.Errorf("the steps trained %d of %d rows", len(seen), len(golden))
			}
		})
	}
}

func TestGenerationConfigTRL110(t *testing.T) {
	cfg := DefaultConfig()
	cfg.GradientAccumulationSteps = 4
	if s, n := cfg.EffectiveStepsPerGeneration(), cfg.EffectiveGenerationBatchSize(); s != 4 || n != 32 {
		t.Errorf("defaults: steps_per_generation %d, generation_batch_size %d; want 4 (gradient_accumulation_steps), 32", s, n)
	}
	cfg.StepsPerGeneration = 2
	if s, n := cfg.EffectiveStepsPerGeneration(), cfg.EffectiveGenerationBatchSize(); s != 2 || n != 16 {
		t.Errorf("steps_per_generation 2: %d, %d; want 2, 16", s, n)
	}
	cfg.StepsPerGeneration, cfg.GenerationBatchSize = 0, 48
	if s := cfg.EffectiveStepsPerGeneration(); s != 6 {
		t.Errorf("generation_batch_size 48: steps_per_generation %d, want 6", s)
	}
	for _, c := range []struct {
		json, want string
	}{
		{`{"steps_per_generation": 2, "generation_batch_size": 16}`, "'generation_batch_size' and 'steps_per_generation' can not be both configured at the same time"},
		{`{"generation_batch_size": 12}`, "generation_batch_size (12) must be divisible by the global batch size (8)."},
		{`{"per_device_train_batch_size": 2, "num_generations": 4, "generation_batch_size": 5}`, "generation_batch_size (5) must be divisible by the global batch size (2)."},
		{`{"per_device_train_batch_size": 2, "num_generations": 4, "generation_batch_size": 10}`, "generation_batch_size (10) must be divisible by num_generations (4)."},
		{`{"per_device_train_batch_size": 2, "num_generations": 4, "steps_per_generation": 3}`, "generation_batch_size (6) must be divisible by num_generations (4)."},
		{`{"steps_per_generation": -1}`, "StepsPerGeneration = -1"},
		{`{"gradient_accumulation_steps": 2, "steps_per_generation": 3, "drop_zero_std_groups": true}`, "DropZeroStdGroups"},
		{`{"per_device_train_batch_size": 2, "num_generations": 4, "steps_per_generation": 2}`, ""},
		{`{"per_device_train_batch_size": 2, "num_generations": 4, "generation_batch_size": 8}`, ""},
	} {
		_, err := DecodeConfig([]byte(c.json))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.json, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", c.json, err, c.want)
		}
	}
}
