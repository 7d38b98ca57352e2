package reward

import (
	"context"
	"math"
	"testing"
	"time"
)

// TestEvaluatorOverflow: scores that are finite but overflow a sum (raw or
// weighted) count as NonFinite failures and score 0; the totals stay
// finite.
func TestEvaluatorOverflow(t *testing.T) {
	huge := Func(func(_, c, _ string) float64 {
		switch c {
		case "max":
			return math.MaxFloat64
		case "big":
			return 1e100 // fine alone, overflows with weight 1e60
		}
		return 1
	})
	ev := &Evaluator{Rewards: []Named{{"raw", 1, huge}, {"weighted", 1e60, huge}}, Workers: 2}
	res, err := ev.Evaluate(context.Background(), []Sample{{Completion: "max"}, {Completion: "big"}, {Completion: "ok"}})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]Failure{{NonFinite, OK, OK}, {NonFinite, NonFinite, OK}}
	for r := range want {
		for i := range want[r] {
			if res.Failures[r][i] != want[r][i] {
				t.Errorf("reward %d sample %d: %v, want %v", r, i, res.Failures[r][i], want[r][i])
			}
		}
	}
	for i, tot := range res.Totals {
		if math.IsInf(tot, 0) || math.IsNaN(tot) {
			t.Errorf("total %d = %v", i, tot)
		}
	}
}

type ctxScorer struct{ stopped chan struct{} }

func (c ctxScorer) Score(Sample) float64 { select {} }

func (c ctxScorer) ScoreContext(ctx context.Context, _ Sample) float64 {
	<-ctx.Done()
	close(c.stopped)
	return 0
}

// TestCallStopsContextScorer: a ContextScorer that overruns its timeout sees
// its context cancelled, so its goroutine ends instead of leaking.
func TestCallStopsContextScorer(t *testing.T) {
	s := ctxScorer{make(chan struct{})}
	if _, f := Call(context.Background(), s, Sample{}, 20*time.Millisecond); f != TimedOut {
		t.Fatalf("failure %v, want TimedOut", f)
	}
	select {
	case <-s.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the timed-out ContextScorer was never cancelled")
	}
}
