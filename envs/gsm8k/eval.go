package gsm8k

import (
	"fmt"
	"math"

	"github.com/grpokit/grpokit/reward"
)

// Report is the accuracy of completions on a slice of examples.
type Report struct {
	N               int
	StrictCorrect   int     // StrictAnswer equals the gold number
	LenientCorrect  int     // LenientAnswer equals the gold number
	StrictFormat    int     // StrictFormatReward > 0
	StrictAccuracy  float64 // StrictCorrect / N
	LenientAccuracy float64 // LenientCorrect / N
}

// String renders the report on one line.
func (r Report) String() string {
	return fmt.Sprintf("gsm8k: n=%d strict %.1f%% (%d) lenient %.1f%% (%d) strict format %d\n",
		r.N, 100*r.StrictAccuracy, r.StrictCorrect, 100*r.LenientAccuracy, r.LenientCorrect, r.StrictFormat)
}

// Evaluate scores completions[i] against examples[i] with both
// extractions. Numbers are compared with a tolerance of 1e-6.
func Evaluate(examples []Example, completions []string) (Report, error) {
	var rep Report
	if len(examples) != len(completions) {
		return rep, fmt.Errorf("gsm8k: evaluate: %d completions for %d examples", len(completions), len(examples))
	}
	for i, ex := range examples {
		gold, err := reward.ParseNumber(ex.Answer)
		if err != nil {
			return rep, fmt.Errorf("gsm8k: evaluate: example %d: gold %q is not a number", i, ex.Answer)
		}
		c := completions[i]
		if v, err := StrictAnswer(c); err == nil && math.Abs(v-gold) < 1e-6 {
			rep.StrictCorrect++
		}
		if v, err := LenientAnswer(c); err == nil && math.Abs(v-gold) < 1e-6 {
			rep.LenientCorrect++
		}
		if StrictFormatReward("", c, "") > 0 {
			rep.StrictFormat++
		}
	}
	rep.N = len(examples)
	if rep.N > 0 {
		rep.StrictAccuracy = float64(rep.StrictCorrect) / float64(rep.N)
		rep.LenientAccuracy = float64(rep.LenientCorrect) / float64(rep.N)
	}
	return rep, nil
}
