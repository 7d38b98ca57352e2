package grpo

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gomlx/gomlx/pkg/core/graph"
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

// finiteStep is the training graph's flag (a boolean scalar) of whether
// the optimizer step may be taken: loss and norm (the gradients' global
// norm) are both finite. A NaN loss of an earlier micro-batch shows in
// norm, since its gradients were accumulated. When the flag is false the
// trainer does not run the update (see adamUpdate), so a NaN or
// infinite step leaves the weights and the optimizer state (moments, step
// counters) exactly as they were.
func finiteStep(loss, norm *graph.Node) *graph.Node {
	return graph.LogicalAnd(graph.IsFinite(loss), graph.IsFinite(norm))
}

// guardStep records in m whether the step just taken had a finite loss and
// gradient norm ("nonfinite": 1 when not, and then it was not applied),
// keeps the count of such steps in a row, and logs each one with the
// rewards of its batch.
func (t *Trainer) guardStep(m Metrics, applied bool) {
	bad := !applied || !finite(m["loss"]) || !finite(m["grad_norm"])
	if !bad {
		m["nonfinite"] = 0
		t.rel.nonFinite = 0
		return
	}
	m["nonfinite"] = 1
	t.rel.nonFinite++
	t.rel.totalNonFinite++
	t.logger().Warn("grpo: step not applied: its loss or gradient norm is NaN or infinite; the weights and the optimizer state are unchanged",
		"step", t.step, "loss", m["loss"], "grad_norm", m["grad_norm"], "in_a_row", t.rel.nonFinite,
		"max_nonfinite_steps", t.cfg.MaxNonFiniteSteps, "rewards", t.rewardSummary())
}

// rewardSummary describes the rewards of the current rollout batch for a
// log line: each reward's mean and failures, and the first totals.
func (t *Trainer) rewardSummary() string {
	if t.buf == nil {
		return "no rollouts"
	}
	var b strings.Builder
	b.WriteString("rewards:")
	for _, r := range t.rewards {
		fmt.Fprintf(&b, " %s mean %v failures %v;", r.Name, t.buf.Metrics["rewards/"+r.Name+"/mean"], t.buf.Metrics["rewards/"+r.Name+"/failures"])
	}
	b.WriteString(" totals [")
	for i, r := range t.buf.Rows {
		if i == 16 {
			fmt.Fprintf(&b, " … %d more", len(t.buf.Rows)-16)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%g", r.Reward)
	}
	b.WriteString("]")
	return b.String()
}

// nonFiniteStop returns an error wrapping ErrNonFinite once
// MaxNonFiniteSteps steps in a row were not finite.
func (t *Trainer) nonFiniteStop() error {
	if t.rel.nonFinite < t.cfg.MaxNonFiniteSteps {
		return nil
	}
	return fmt.Errorf("grpo: step %d: %d steps in a row had a NaN or infinite loss or gradient norm (MaxNonFiniteSteps %d); "+
		"none was applied, the weights are those after step %d: %w",
		t.step, t.rel.nonFinite, t.cfg.MaxNonFiniteSteps, t.step-t.rel.nonFinite, ErrNonFinite)
}

// failed saves the last completed step after a training error (other than
// cancellation) and returns err, joined with the save's error if any. It
// does not save after a step that was not finite, nor a step already saved.
func (t *Trainer) failed(err error) error {
	if t.cfg.OutputDir == "" || t.rel.nonFinite > 0 || t.rel.savedStep == t.step {
		return err
	}
	path, serr := t.Save(t.cfg.OutputDir)
	if serr != nil {
		return errors.Join(err, serr)
	}
	return fmt.Errorf("%w (step %d saved in %s)", err, t.step, path)
}
