package poker

import (
	"fmt"
	"strings"
)

// ClassResult counts the predictions for one true class.
type ClassResult struct {
	N       int // examples of this class
	Correct int // of which the prediction was right
	Invalid int // of which the prediction was not a label
}

// Accuracy returns Correct/N, or 0 when N is 0.
func (r ClassResult) Accuracy() float64 {
	if r.N == 0 {
		return 0
	}
	return float64(r.Correct) / float64(r.N)
}

// Report summarizes predictions against true classes.
type Report struct {
	PerClass [NumClasses]ClassResult
	N        int     // all examples
	Accuracy float64 // correct / N
	// MacroAccuracy is the mean of per-class accuracies over the classes
	// that have examples.
	MacroAccuracy float64
	// ValidShare is the share of predictions that parse as a label.
	ValidShare float64
	// MeanReward is the mean of Reward over the examples: the true
	// class's Weight where the prediction is right, 0 elsewhere.
	MeanReward float64
	// Confusion counts valid predictions: Confusion[truth][predicted].
	// It shows which class a weak one is mistaken for.
	Confusion [NumClasses][NumClasses]int
}

// Evaluate compares predictions (the policy's raw replies) with the true
// classes. It returns an error when the lengths differ or a truth is not a
// valid class.
func Evaluate(predictions []string, truths []Class) (Report, error) {
	var rep Report
	if len(predictions) != len(truths) {
		return rep, fmt.Errorf("poker: evaluate: %d predictions for %d truths", len(predictions), len(truths))
	}
	correct, valid := 0, 0
	for i, p := range predictions {
		t := truths[i]
		if !t.Valid() {
			return rep, fmt.Errorf("poker: evaluate: truth %d is invalid (%v)", i, t)
		}
		r := &rep.PerClass[t]
		r.N++
		got, err := ParseLabel(p)
		if err == nil {
			rep.Confusion[t][got]++
		}
		switch {
		case err != nil:
			r.Invalid++
		case got == t:
			r.Correct++
			correct++
			valid++
			rep.MeanReward += t.Weight()
		default:
			valid++
		}
	}
	rep.N = len(truths)
	if rep.N > 0 {
		rep.Accuracy = float64(correct) / float64(rep.N)
		rep.ValidShare = float64(valid) / float64(rep.N)
		rep.MeanReward /= float64(rep.N)
	}
	present := 0
	for _, r := range rep.PerClass {
		if r.N > 0 {
			rep.MacroAccuracy += r.Accuracy()
			present++
		}
	}
	if present > 0 {
		rep.MacroAccuracy /= float64(present)
	}
	return rep, nil
}

// String renders the report as an aligned table, one row per class.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s %6s %8s %8s %8s\n", "class", "n", "correct", "invalid", "accuracy")
	for c, cr := range r.PerClass {
		fmt.Fprintf(&b, "%-16s %6d %8d %8d %7.1f%%\n", Class(c), cr.N, cr.Correct, cr.Invalid, 100*cr.Accuracy())
	}
	fmt.Fprintf(&b, "accuracy %.1f%%  macro accuracy %.1f%%  valid labels %.1f%%  (n=%d)\n",
		100*r.Accuracy, 100*r.MacroAccuracy, 100*r.ValidShare, r.N)
	return b.String()
}

// abbrev are short column heads for ConfusionTable, in class order.
var abbrev = [NumClasses]string{"high", "pair", "2pair", "trips", "str", "flush", "full", "quads", "sflush"}

// ConfusionTable renders Confusion with one row per true class and one
// column per predicted class (abbreviated: high, pair, 2pair, trips, str,
// flush, full, quads, sflush).
func (r Report) ConfusionTable() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s", "true \\ predicted")
	for _, a := range abbrev {
		fmt.Fprintf(&b, " %6s", a)
	}
	b.WriteByte('\n')
	for t := range r.Confusion {
		fmt.Fprintf(&b, "%-16s", Class(t))
		for _, n := range r.Confusion[t] {
			fmt.Fprintf(&b, " %6d", n)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
