package grpo

import (
	"fmt"
	"math/rand/v2"

	"github.com/grpokit/grpokit/loss"
)

// This file holds TRL 1.16's generation batches (steps_per_generation /
// generation_batch_size): one batch of completions generated, scored and
// turned into advantages at once, then fed to the optimizer
// BatchSize completions (one TRL micro-batch) at a time.
//
// TRL counts micro-batches (its _step, one per forward/backward pass). With
// S = StepsPerGeneration, μ = NumIterations and A =
// GradientAccumulationSteps, micro-batch s uses slice s mod S of generation
// batch ⌊s / (S·μ)⌋, and optimizer step i is micro-batches i·A … i·A+A−1.
// When S = A (the default) one generation batch is one optimizer step,
// reused for μ steps.

// validateGeneration checks StepsPerGeneration and GenerationBatchSize as
// TRL 1.16's GRPOConfig.__post_init__ does (same messages), plus the
// combinations grpokit does not support.
func (c Config) validateGeneration() []error {
	var errs []error
	bad := func(field string, value any, reason string) {
		errs = append(errs, &FieldError{Field: field, Value: value, Reason: reason})
	}
	if c.StepsPerGeneration < 0 {
		bad("StepsPerGeneration", c.StepsPerGeneration, "must be ≥ 0 (0 means TRL's None: GradientAccumulationSteps)")
	}
	if c.GenerationBatchSize < 0 {
		bad("GenerationBatchSize", c.GenerationBatchSize, "must be ≥ 0 (0 means TRL's None: BatchSize × StepsPerGeneration)")
	}
	if c.StepsPerGeneration > 0 && c.GenerationBatchSize > 0 {
		bad("GenerationBatchSize", c.GenerationBatchSize,
			"'generation_batch_size' and 'steps_per_generation' can not be both configured at the same time")
		return errs
	}
	if len(errs) > 0 || c.NumGenerations < 2 || c.BatchSize < 1 || c.GradientAccumulationSteps < 1 {
		return errs // reported by Validate's own checks
	}
	if c.GenerationBatchSize > 0 && c.GenerationBatchSize%c.BatchSize != 0 {
		bad("GenerationBatchSize", c.GenerationBatchSize, fmt.Sprintf(
			"generation_batch_size (%d) must be divisible by the global batch size (%d).", c.GenerationBatchSize, c.BatchSize))
		return errs
	}
	if n := c.EffectiveGenerationBatchSize(); n%c.NumGenerations != 0 {
		trl := fmt.Sprintf("generation_batch_size (%d) must be divisible by num_generations (%d).", n, c.NumGenerations)
		switch {
		case c.GenerationBatchSize > 0:
			bad("GenerationBatchSize", c.GenerationBatchSize, trl)
		case c.StepsPerGeneration > 0:
			bad("StepsPerGeneration", c.StepsPerGeneration, fmt.Sprintf(
				"BatchSize × StepsPerGeneration = %d must be a multiple of NumGenerations (%d) (TRL: %s)", n, c.NumGenerations, trl))
		default: // steps_per_generation defaults to gradient_accumulation_steps
			bad("BatchSize", c.BatchSize, fmt.Sprintf(
				"BatchSize × GradientAccumulationSteps = %d must be a multiple of NumGenerations (%d) (TRL: %s)", n, c.NumGenerations, trl))
		}
	}
	if c.DropZeroStdGroups && !c.stepsInOneGeneration() {
		bad("DropZeroStdGroups", c.DropZeroStdGroups, fmt.Sprintf(
			"needs steps_per_generation (%d) to be a multiple of gradient_accumulation_steps (%d): its loss normalizer counts the rows of each optimizer step",
			c.EffectiveStepsPerGeneration(), c.GradientAccumulationSteps))
	}
	return errs
}

// stepsInOneGeneration reports whether every optimizer step takes all its
// micro-batches from one generation batch (StepsPerGeneration a multiple
// of GradientAccumulationSteps), so that its loss normalizers are known
// when the batch is made.
func (c Config) stepsInOneGeneration() bool {
	return c.EffectiveStepsPerGeneration()%max(1, c.GradientAccumulationSteps) == 0
}

// microRef names the slice of a generation batch one micro-batch uses.
type microRef struct {
	Batch int  // generation batch index
	Slice int  // slice of that batch, in [0, StepsPerGeneration)
	First bool // the batch's first micro-batch, where TRL generates it
}

// stepSchedule returns the slices the micro-batches of optimizer step
// (0-based) use, in order (TRL's _prepare_inputs indexing).
func (c Config) stepSchedule(step int) []microRef {
	a := max(1, c.GradientAccumulationSteps)
	spg := max(1, c.EffectiveStepsPerGeneration())
	every := spg * max(1, c.NumIterations)
	out := make([]microRef, a)
	for j := range out {
		s := step*a + j
		out[j] = microRef{Batch: s / every, Slice: s % spg, First: s%every == 0}
	}
	return out
}

// needsOldLogProbs reports whether the rows of a generation batch are
// trained on after an optimizer update, so that the ratio needs the
// log-probs of generation time: TRL computes them unless
// gradient_accumulation_steps is a multiple of steps_per_generation ×
// num_iterations.
func (c Config) needsOldLogProbs() bool {
	return c.GradientAccumulationSteps%(c.EffectiveStepsPerGeneration()*max(1, c.NumIterations)) != 0
}

// shuffleGeneration reorders the rows of generation batch k before they
// are split into slices, as TRL's shuffle_sequence_dict does (a seeded
// permutation here, so that runs repeat), when the batch feeds more than
// one optimizer step: there it decides which rows each step sees. Within
// one step the order would only change how rows are packed (and padded),
// so groups are kept together.
func (t *Trainer) shuffleGeneration(k int, rows []*row) []*row {
	if t.cfg.EffectiveStepsPerGeneration() <= t.cfg.GradientAccumulationSteps {
		return rows
	}
	r := rand.New(rand.NewPCG(t.seed(k, 0), 0x5bff1e))
	out := make([]*row, len(rows))
	for i, j := range r.Perm(len(rows)) {
		out[i] = rows[j]
	}
	return out
}

// slice returns the micro-batches of slice j of the generation batch:
// its micro-batches split as evenly as possible into StepsPerGeneration
// runs (one micro-batch each for a Dataset; an Env's later turns add rows).
func (b *rolloutBatch) slice(j, spg int) []*microBatch {
	m := len(b.Micro)
	return b.Micro[j*m/spg : (j+1)*m/spg]
}

// stepNormalizers returns the normalizers of each micro-batch of buf:
// norm's generation-batch counts (Tokens, Columns) with the Rows and
// MicroBatch of the optimizer step the micro-batch is trained in. When
// steps take all their micro-batches from one generation batch these are
// counted (rows in the loss, from microRows); otherwise every step has
// GradientAccumulationSteps full micro-batches (Validate and TrainEnv
// rule out what could change that).
func (t *Trainer) stepNormalizers(buf *rolloutBatch, microRows []int, norm loss.StepNormalizers) []loss.StepNormalizers {
	a, spg := t.cfg.GradientAccumulationSteps, t.cfg.EffectiveStepsPerGeneration()
	norm.StepShare = float64(a) / float64(max(1, spg)) // TRL 1.16's dapo normalizer scale
	out := make([]loss.StepNormalizers, len(buf.Micro))
	if !t.cfg.stepsInOneGeneration() {
		for i := range out {
			out[i] = norm
			out[i].Rows, out[i].MicroBatch = t.cfg.BatchSize*a, a
		}
		return out
	}
	m := len(buf.Micro)
	for first := 0; first < spg; first += a {
		// Micro-batches of slices first … first+a−1, one optimizer step.
		lo, hi := first*m/spg, (first+a)*m/spg
		n := norm
		n.MicroBatch = hi - lo
		for _, r := range microRows[lo:hi] {
			n.Rows += r
		}
		for i := lo; i < hi; i++ {
			out[i] = n
		}
	}
	return out
}

// usedBatch is a generation batch an optimizer step trains on, and
// whether the step generated it.
type usedBatch struct {
	batch *rolloutBatch
	fresh bool
}

// generationMetrics returns the rollout metrics of a step's generation
// batches (their mean when a step spans several, as TRL averages its
// per-generation logs) and their internal counts, summed: "_step_tokens"
// over every batch, the "_timing/…" of the fresh ones (zero when the step
// reused its rollouts).
func generationMetrics(used []usedBatch) (m, internal Metrics) {
	m, internal = Metrics{}, Metrics{}
	for _, u := range used {
		for k, v := range u.batch.Metrics {
			switch {
			case k[0] != '_':
				m[k] += v / float64(len(used))
			case k == "_step_tokens" || u.fresh:
				internal[k] += v
			}
		}
	}
	return m, internal
}

// midGeneration reports whether optimizer step (0-based) starts inside a
// generation batch made by an earlier step, whose rollouts a checkpoint
// taken before it must therefore carry.
func (c Config) midGeneration(step int) bool {
	return !c.stepSchedule(step)[0].First
}
