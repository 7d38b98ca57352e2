package reward_test

import (
	"context"
	"math"
	"testing"

	"github.com/grpokit/grpokit/reward"
)

// A reward's NotApplicable leaves it out for that sample: not in the
// total, not in its mean and std, and not a failure; a NaN computed by
// mistake still fails.
func TestNotApplicable(t *testing.T) {
	if !reward.IsNotApplicable(reward.NotApplicable()) || reward.IsNotApplicable(math.NaN()) || reward.IsNotApplicable(0) {
		t.Fatal("IsNotApplicable does not tell NotApplicable from NaN and numbers")
	}
	samples := []reward.Sample{{Answer: "a"}, {Answer: "b"}, {Answer: "c"}, {Answer: "d"}}
	scores := map[string]float64{"a": 1, "b": reward.NotApplicable(), "c": 3, "d": math.NaN()}
	ev := &reward.Evaluator{Rewards: []reward.Named{
		{Name: "opt", Weight: 2, Scorer: reward.ScorerFunc(func(s reward.Sample) float64 { return scores[s.Answer] })},
		{Name: "one", Weight: 1, Scorer: reward.ScorerFunc(func(reward.Sample) float64 { return 1 })},
	}}
	res, err := ev.Evaluate(context.Background(), samples)
	if err != nil {
		t.Fatal(err)
	}
	// Totals by hand: 2·1+1, 1 (opt left out), 2·3+1, 0+1 (NaN fails: 0).
	for i, want := range []float64{3, 1, 7, 1} {
		if res.Totals[i] != want {
			t.Errorf("total %d = %g, want %g", i, res.Totals[i], want)
		}
	}
	st := res.Stats[0]
	// Mean over the applicable 1, 3, 0 (the failure counts as 0): 4/3; std
	// sqrt(((1-4/3)² + (3-4/3)² + (4/3)²)/2).
	wantStd := math.Sqrt((1.0/9 + 25.0/9 + 16.0/9) / 2)
	if st.NotApplicable != 1 || st.NonFinite != 1 || st.Failures() != 1 ||
		math.Abs(st.Mean-4.0/3) > 1e-12 || math.Abs(st.Std-wantStd) > 1e-12 {
		t.Errorf("stats %+v, want 1 not applicable, 1 non-finite, mean 4/3, std %g", st, wantStd)
	}
	if !reward.IsNotApplicable(res.Scores[0][1]) {
		t.Errorf("score of the sample it did not apply to: %g", res.Scores[0][1])
	}
	// Applied to none: NaN mean, as TRL's nanmean.
	none := &reward.Evaluator{Rewards: []reward.Named{{Name: "never", Weight: 1,
		Scorer: reward.ScorerFunc(func(reward.Sample) float64 { return reward.NotApplicable() })}}}
	if res, err := none.Evaluate(context.Background(), samples[:2]); err != nil || !math.IsNaN(res.Stats[0].Mean) || res.Totals[0] != 0 {
		t.Errorf("never applies: %+v, %v", res, err)
	}
	// Weighted and Safe pass it through the same way.
	w := reward.Weighted(ev.Rewards...)
	if got := w.Score(samples[1]); got != 1 {
		t.Errorf("Weighted = %g, want 1", got)
	}
	if !reward.IsNotApplicable(reward.Safe(func(_, _, _ string) float64 { return reward.NotApplicable() })("", "", "")) {
		t.Error("Safe turned NotApplicable into a score")
	}
}
