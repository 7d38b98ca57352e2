package grpo

import (
	"cmp"
	"fmt"
	"math"
	"strings"
)

// defaultZeroStdWarnSteps is Trainer.ZeroStdWarnSteps's default.
const defaultZeroStdWarnSteps = 10

// Trainer.CollapseWarnSteps's and Trainer.CollapseFraction's defaults.
const (
	defaultCollapseWarnSteps = 5
	defaultCollapseFraction  = 0.5
)

// collapseWatch holds the sampled rewards a warm-started run's collapse
// warning compares: those of the run's first steps, and of its latest.
type collapseWatch struct {
	first  []float64 // the first window's step rewards
	recent []float64 // the latest steps' rewards, at most a window
	warned bool
}

// mean is the mean of xs.
func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// watchCollapse feeds a step's sampled reward to the warm-start collapse
// watch (Trainer.WarmStarted) and warns, once, when the mean of the last
// CollapseWarnSteps steps has fallen below CollapseFraction of the mean
// of the run's first CollapseWarnSteps steps. Steps whose reward is NaN
// (no reward applied) are left out; a resumed run is not watched.
func (t *Trainer) watchCollapse(m Metrics) {
	k := cmp.Or(t.CollapseWarnSteps, defaultCollapseWarnSteps)
	w := &t.collapse
	if !t.WarmStarted || k < 0 || t.startStep > 0 || w.warned {
		return
	}
	r, ok := m["reward"]
	if !ok || math.IsNaN(r) {
		return
	}
	if len(w.first) < k {
		w.first = append(w.first, r)
		return
	}
	w.recent = append(w.recent, r)
	if len(w.recent) > k {
		w.recent = w.recent[1:]
	}
	if len(w.recent) < k {
		return
	}
	frac := t.CollapseFraction
	if frac == 0 {
		frac = defaultCollapseFraction
	}
	first, last := mean(w.first), mean(w.recent)
	if first > 0 && last < frac*first {
		w.warned = true
		t.logger().Warn("grpo: sampled reward collapsed after the warm start: the mean reward of the last window steps fell below fraction of the first window steps' mean; "+
			"the learning rate is likely too high for this model (lower it 3-10x; docs/training.md gives ranges by model size, LoRA or full fine-tuning), "+
			"or sampling is far worse than greedy decoding after the warm start (compare eval's greedy reward; more sft steps, or a lower temperature)",
			"step", t.step, "first_steps_reward", first, "last_steps_reward", last, "window", k, "fraction", frac)
	}
}

// logWindow holds the metrics of the steps since the last progress line,
// so that the line shows their mean, as TRL's logs average over
// logging_steps (each metric over the steps where it is not NaN, as TRL's
// log drops NaN values before averaging); reward failures are summed
// instead.
type logWindow struct {
	sum Metrics
	cnt map[string]int // steps with a value (not NaN) of each metric
	n   int
	// zeroStd counts the consecutive steps with frac_reward_zero_std = 1.
	zeroStd int
}

// add records one step's metrics.
func (w *logWindow) add(m Metrics) {
	if w.sum == nil {
		w.sum, w.cnt = Metrics{}, map[string]int{}
	}
	for k, v := range m {
		if _, ok := w.sum[k]; !ok {
			w.sum[k] = 0
		}
		if !math.IsNaN(v) {
			w.sum[k] += v
			w.cnt[k]++
		}
	}
	w.n++
	if v, ok := m["frac_reward_zero_std"]; ok && v >= 1 {
		w.zeroStd++
	} else {
		w.zeroStd = 0
	}
}

// flush returns the window's metrics (means, summed failures, the last
// step) and empties it.
func (w *logWindow) flush(last Metrics) Metrics {
	out := Metrics{}
	for k, v := range w.sum {
		switch {
		case strings.HasSuffix(k, "/failures"):
			out[k] = v
		case w.cnt[k] == 0:
			out[k] = math.NaN()
		default:
			out[k] = v / float64(w.cnt[k])
		}
	}
	out["step"] = last["step"]
	out["logged_steps"] = float64(w.n)
	w.sum, w.cnt, w.n = nil, nil, 0
	return out
}

// logStep feeds a step's metrics to the window, prints the progress line
// every LoggingSteps steps (and at the last), and warns when the groups
// have had no reward spread for Trainer.ZeroStdWarnSteps steps in a row.
func (t *Trainer) logStep(m Metrics, total int) {
	t.win.add(m)
	if t.tokenSignal(m) {
		t.win.zeroStd = 0 // the token credit carried a signal
	}
	n := t.ZeroStdWarnSteps
	if n == 0 {
		n = defaultZeroStdWarnSteps
	}
	if n > 0 && t.win.zeroStd > 0 && t.win.zeroStd%n == 0 {
		t.logger().Warn("grpo: no learning signal: every group's completions got equal rewards (frac_reward_zero_std = 1), so every advantage is 0; make the task easier or the rewards finer, or raise num_generations or temperature",
			"step", t.step, "steps_in_a_row", t.win.zeroStd)
	}
	t.watchCollapse(m)
	if t.cfg.LoggingSteps > 0 && (t.step%t.cfg.LoggingSteps == 0 || t.step == total) {
		fmt.Fprintln(t.progress(), t.progressLine(t.win.flush(m), total))
		if t.cfg.LogCompletions && t.buf != nil {
			printSamples(t.progress(), t.step, t.buf.Rows, t.rewardNames(), t.cfg.NumCompletionsToPrint, t.cfg.LogUniquePrompts, t.cfg.Seed)
		}
	}
}

// rewardNames returns the names of the trainer's rewards, in order.
func (t *Trainer) rewardNames() []string {
	names := make([]string, len(t.rewards))
	for i, r := range t.rewards {
		names[i] = r.Name
	}
	return names
}
