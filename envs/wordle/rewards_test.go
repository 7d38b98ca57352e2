package wordle

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/reward"
)

func TestScoreMove(t *testing.T) {
	crane := []Turn{{Guess: "crane", Feedback: Feedback{Green, Yellow, Yellow, Gray, Gray}}} // against CIGAR
	tests := []struct {
		name    string
		history []Turn
		reply   string
		want    Breakdown
		total   float64 // with DefaultWeights
		invalid string
	}{
		// First-guess win: win bonus 1 + 0.1×5; 0.2+0.2+0.5+0.5×1+1.5 = 2.9.
		{"win on guess 1", nil, "<think>x</think><guess>cigar</guess>", Breakdown{1, 1, 1, 1, 1.5, 1}, 2.9, ""},
		// CRANE vs CIGAR is GYY..: partial 0.2+0.1+0.1; no think block.
		{"no think", nil, "<guess>crane</guess>", Breakdown{0, 1, 1, 0.4, 0, 1}, 0.9, ""},
		{"win on guess 2", crane, "<think>t</think><guess>CIGAR</guess>", Breakdown{1, 1, 1, 1, 1.4, 1}, 2.8, ""},
		// CRANK cannot be the answer after CRANE got GYY..; CRANK vs CIGAR is GYY.. too.
		// Were CRANK the answer, CRANE would score GGGG.: fit 2/5 (positions 1 and 5).
		{"inconsistent", crane, "<think>t</think><guess>crank</guess>", Breakdown{1, 1, 0, 0.4, 0, 0.4}, 0.6, ""},
		// CHAIR has A third, which CRANE=GYY.. rules out; vs CIGAR it is G.YYG.
		// Were CHAIR the answer, CRANE would score GYG..: fit 4/5.
		{"a at a yellow spot", crane, "<think>t</think><guess>chair</guess>", Breakdown{1, 1, 0, 0.6, 0, 0.8}, 0.7, ""},
		// COBRA fits CRANE=GYY.. (C first, R and A elsewhere, no N or E);
		// vs CIGAR it is G..YY: 0.2+0.1+0.1.
		{"consistent", crane, "<think>t</think><guess>cobra</guess>", Breakdown{1, 1, 1, 0.4, 0, 1}, 1.1, ""},
		// Were CRANE the answer, it would have scored GGGGG: fit 1/5.
		{"repeat guess", crane, "<think>t</think><guess>crane</guess>", Breakdown{1, 1, 0, 0.4, 0, 0.2}, 0.6, ""},
		{"unknown word", nil, "<think>t</think><guess>xyzzy</guess>", Breakdown{Format: 1}, 0.2, `not an allowed word: "xyzzy"`},
		{"no guess", nil, "I think CRANE", Breakdown{}, 0, "no <guess>…</guess> in the reply"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, turn := ScoreMove("cigar", tc.history, tc.reply)
			if !near(b, tc.want) {
				t.Errorf("breakdown = %+v, want %+v", b, tc.want)
			}
			if got := b.Total(DefaultWeights()); math.Abs(got-tc.total) > 1e-9 {
				t.Errorf("total = %v, want %v", got, tc.total)
			}
			if turn.Invalid != tc.invalid {
				t.Errorf("Invalid = %q, want %q", turn.Invalid, tc.invalid)
			}
		})
	}
}

func near(a, b Breakdown) bool {
	d := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	return d(a.Format, b.Format) && d(a.Valid, b.Valid) && d(a.Consistent, b.Consistent) && d(a.Partial, b.Partial) && d(a.Win, b.Win) && d(a.Fit, b.Fit)
}

func TestRewardsEvaluator(t *testing.T) {
	st := State{Answer: "cigar", Earlier: []string{"crane"}}
	ev := &reward.Evaluator{Rewards: Rewards(DefaultWeights())}
	res, err := ev.Evaluate(context.Background(), []reward.Sample{
		st.Sample("<think>t</think><guess>cobra</guess>"),
		st.Sample("<think>t</think><guess>cigar</guess>"),
		{Completion: "<guess>chair</guess>", Answer: "zzzzz"}, // invalid answer: all 0
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1.1, 2.8, 0}
	for i, w := range want {
		if math.Abs(res.Totals[i]-w) > 1e-9 {
			t.Errorf("Totals[%d] = %v, want %v", i, res.Totals[i], w)
		}
	}
	names := []string{}
	for _, s := range res.Stats {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "format,valid,consistent,partial,win,fit" {
		t.Errorf("names = %v", names)
	}
}
