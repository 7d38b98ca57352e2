package grpo

import (
	"fmt"
	"math"
)

// TrainSteps returns the optimizer steps Train runs on a dataset of n
// examples, as HF's Trainer computes them: MaxSteps when it is > 0 (it
// wins over NumTrainEpochs); otherwise ⌈NumTrainEpochs × steps per
// epoch⌉, at least 1. An epoch is ⌊n / PromptsPerGeneration⌋ generation
// batches (at least 1; a last partial batch is dropped, as TRL's
// RepeatSampler does), each feeding StepsPerGeneration × NumIterations
// micro-batches, GradientAccumulationSteps per step (rounded down, as HF's
// len(dataloader) // gradient_accumulation_steps).
func (c Config) TrainSteps(n int) int {
	if c.MaxSteps > 0 {
		return c.MaxSteps
	}
	micro := max(1, n/max(1, c.PromptsPerGeneration())) * max(1, c.NumIterations) * max(1, c.EffectiveStepsPerGeneration())
	perEpoch := max(1, micro/max(1, c.GradientAccumulationSteps))
	// The tolerance keeps 0.1 × 30 from rounding up to 4.
	return max(1, int(math.Ceil(c.NumTrainEpochs*float64(perEpoch)-1e-9)))
}

// EpochAt returns the epochs of a dataset of n examples that step
// optimizer steps have trained on, as HF's Trainer logs them (its epoch:
// micro-batches done over micro-batches per epoch, the count TrainSteps
// uses).
func (c Config) EpochAt(step, n int) float64 {
	micro := max(1, n/max(1, c.PromptsPerGeneration())) * max(1, c.NumIterations) * max(1, c.EffectiveStepsPerGeneration())
	return float64(step*max(1, c.GradientAccumulationSteps)) / float64(micro)
}

// validateRunLength checks NumTrainEpochs, EvalStrategy and EvalSteps.
func (c Config) validateRunLength() []error {
	var errs []error
	bad := func(field string, value any, reason string) {
		errs = append(errs, &FieldError{Field: field, Value: value, Reason: reason})
	}
	e := c.NumTrainEpochs
	switch {
	case math.IsNaN(e) || math.IsInf(e, 0) || e < 0:
		bad("NumTrainEpochs", e, "must be a finite number ≥ 0")
	case e == 0 && c.MaxSteps == 0:
		bad("NumTrainEpochs", e, "must be > 0 when MaxSteps is 0 (one of them sets the run length)")
	}
	if c.EvalSteps < 0 {
		bad("EvalSteps", c.EvalSteps, "must be ≥ 0 (0 means LoggingSteps, as HF)")
	}
	switch c.EvalStrategy {
	case EvalNo, "":
		if c.EvalSteps > 0 {
			bad("EvalSteps", c.EvalSteps, fmt.Sprintf("is set but EvalStrategy is %q: set eval_strategy to \"steps\"", c.EvalStrategy))
		}
	case EvalByStep:
		if c.EvalSteps == 0 && c.LoggingSteps == 0 {
			bad("EvalSteps", c.EvalSteps, `must be > 0 with EvalStrategy "steps" (0 means LoggingSteps, which is 0 too)`)
		}
	default:
		bad("EvalStrategy", fmt.Sprintf("%q", c.EvalStrategy), `must be "no" or "steps" ("epoch" is not supported)`)
	}
	return errs
}
