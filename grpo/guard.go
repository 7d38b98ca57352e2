package grpo

import (
	"errors"
	"math"
	"time"

	"github.com/grpokit/grpokit/reward"
)

// ErrNonFinite is wrapped by Train's error when Config.MaxNonFiniteSteps
// consecutive steps had a NaN or infinite loss or gradient norm. None of
// those steps changed the weights or the optimizer state.
var ErrNonFinite = errors.New("non-finite loss or gradient norm")

// DefaultSaveMinutes is the time-based checkpoint interval the examples
// and the grpokit command use (Config.SaveMinutes): a killed run loses at
// most about this many minutes.
const DefaultSaveMinutes = 5

// validateReliability checks the reliability settings.
func (c Config) validateReliability() []error {
	var errs []error
	bad := func(field string, value any, reason string) {
		errs = append(errs, &FieldError{Field: field, Value: value, Reason: reason})
	}
	if !(c.SaveMinutes >= 0) || math.IsInf(c.SaveMinutes, 0) {
		bad("SaveMinutes", c.SaveMinutes, "must be a finite number ≥ 0 (0 disables time-based saves)")
	}
	if c.MaxNonFiniteSteps < 1 {
		bad("MaxNonFiniteSteps", c.MaxNonFiniteSteps, "must be at least 1")
	}
	if !(c.RewardTimeout >= 0) || math.IsInf(c.RewardTimeout, 0) {
		bad("RewardTimeout", c.RewardTimeout, "must be a finite number of seconds ≥ 0 (0 means reward.DefaultTimeout)")
	}
	if c.RewardWorkers < 0 {
		bad("RewardWorkers", c.RewardWorkers, "must be ≥ 0 (0 means GOMAXPROCS)")
	}
	return errs
}

// rewardEvaluator returns the Evaluator of the trainer's rewards with the
// configured timeout and workers.
func rewardEvaluator(c Config, rewards []reward.Named) *reward.Evaluator {
	return &reward.Evaluator{
		Rewards: rewards,
		Timeout: time.Duration(c.RewardTimeout * float64(time.Second)),
		Workers: c.RewardWorkers,
	}
}

// finite reports whether x is neither NaN nor ±Inf.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
