package grpo

import (
	"math"
	"testing"
)

// TestLogWindowSkipsNaN: the progress line's mean of a metric leaves out
// the steps where it was NaN (a reward that applied to no row, a step
// not applied), as TRL's log does, and is NaN only when every step was.
func TestLogWindowSkipsNaN(t *testing.T) {
	var w logWindow
	nan := math.NaN()
	w.add(Metrics{"step": 1, "reward": 1, "rewards/a/mean": nan, "loss": nan, "rewards/a/failures": 1})
	w.add(Metrics{"step": 2, "reward": 2, "rewards/a/mean": nan, "loss": 0.5, "rewards/a/failures": 2})
	w.add(Metrics{"step": 3, "reward": 3, "rewards/a/mean": nan, "loss": nan})
	m := w.flush(Metrics{"step": 3})
	if m["reward"] != 2 || m["loss"] != 0.5 || !math.IsNaN(m["rewards/a/mean"]) || m["rewards/a/failures"] != 3 || m["logged_steps"] != 3 {
		t.Errorf("window %v", m)
	}
}
