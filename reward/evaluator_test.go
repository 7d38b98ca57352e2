package reward

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func samples(cs ...string) []Sample {
	out := make([]Sample, len(cs))
	for i, c := range cs {
		out[i] = Sample{Completion: c}
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestEvaluator(t *testing.T) {
	length := Func(func(_, c, _ string) float64 { return float64(len(c)) })
	one := Func(func(_, _, _ string) float64 { return 1 })
	panicky := Func(func(_, c, _ string) float64 {
		if c == "bb" {
			panic("user bug")
		}
		return float64(len(c))
	})
	nonfinite := Func(func(_, c, _ string) float64 {
		switch c {
		case "a":
			return math.NaN()
		case "ccc":
			return math.Inf(1)
		}
		return 4
	})
	tests := []struct {
		name    string
		rewards []Named
		scores  [][]float64
		totals  []float64
		stats   []Stats
	}{
		{
			name:    "weighted",
			rewards: []Named{{"len", 1, length}, {"half", 0.5, one}},
			scores:  [][]float64{{1, 2, 3}, {1, 1, 1}},
			totals:  []float64{1.5, 2.5, 3.5},
			// len: mean 2, sample std sqrt((1+0+1)/2) = 1.
			stats: []Stats{{Name: "len", Mean: 2, Std: 1}, {Name: "half", Mean: 1, Std: 0}},
		},
		{
			name:    "panic scores zero",
			rewards: []Named{{"p", 2, panicky}},
			scores:  [][]float64{{1, 0, 3}},
			totals:  []float64{2, 0, 6},
			// mean 4/3; squared deviations 1/9+16/9+25/9 = 42/9; /2 = 7/3.
			stats: []Stats{{Name: "p", Mean: 4.0 / 3, Std: math.Sqrt(7.0 / 3), Panics: 1}},
		},
		{
			name:    "nan and inf score zero",
			rewards: []Named{{"nf", 1, nonfinite}},
			scores:  [][]float64{{0, 4, 0}},
			totals:  []float64{0, 4, 0},
			// mean 4/3; squared deviations 16/9+64/9+16/9 = 96/9; /2 = 16/3.
			stats: []Stats{{Name: "nf", Mean: 4.0 / 3, Std: math.Sqrt(16.0 / 3), NonFinite: 2}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Evaluator{Rewards: tc.rewards, Workers: 2}
			res, err := ev.Evaluate(context.Background(), samples("a", "bb", "ccc"))
			if err != nil {
				t.Fatal(err)
			}
			for r := range tc.scores {
				for i := range tc.scores[r] {
					if !near(res.Scores[r][i], tc.scores[r][i]) {
						t.Errorf("Scores[%d][%d] = %v, want %v", r, i, res.Scores[r][i], tc.scores[r][i])
					}
				}
			}
			for i := range tc.totals {
				if !near(res.Totals[i], tc.totals[i]) {
					t.Errorf("Totals[%d] = %v, want %v", i, res.Totals[i], tc.totals[i])
				}
			}
			for r, want := range tc.stats {
				got := res.Stats[r]
				if got.Name != want.Name || !near(got.Mean, want.Mean) || !near(got.Std, want.Std) ||
					got.Panics != want.Panics || got.NonFinite != want.NonFinite || got.Timeouts != want.Timeouts {
					t.Errorf("Stats[%d] = %+v, want %+v", r, got, want)
				}
			}
		})
	}
}

func TestEvaluatorFailureKinds(t *testing.T) {
	f := Func(func(_, c, _ string) float64 {
		switch c {
		case "panic":
			panic(errors.New("x"))
		case "nan":
			return math.NaN()
		}
		return 1
	})
	ev := &Evaluator{Rewards: []Named{{"f", 1, f}}}
	res, err := ev.Evaluate(context.Background(), samples("ok", "panic", "nan"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Failure{OK, Panicked, NonFinite}
	for i, w := range want {
		if res.Failures[0][i] != w {
			t.Errorf("Failures[0][%d] = %v, want %v", i, res.Failures[0][i], w)
		}
	}
	if got := res.Stats[0].Failures(); got != 2 {
		t.Errorf("Failures() = %d, want 2", got)
	}
	if TimedOut.String() != "timeout" || Failure(9).String() != "Failure(9)" {
		t.Errorf("Failure.String: %q, %q", TimedOut, Failure(9))
	}
}

func TestEvaluatorTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release) // let the abandoned call finish after the test
	slow := Func(func(_, c, _ string) float64 {
		if c == "bb" {
			<-release
		}
		return 1
	})
	ev := &Evaluator{Rewards: []Named{{"slow", 1, slow}}, Timeout: 50 * time.Millisecond, Workers: 1}
	start := time.Now()
	res, err := ev.Evaluate(context.Background(), samples("a", "bb", "ccc"))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Evaluate blocked for %v on a stuck reward", d)
	}
	if got := res.Scores[0]; got[0] != 1 || got[1] != 0 || got[2] != 1 {
		t.Errorf("Scores = %v, want [1 0 1]", got)
	}
	if res.Stats[0].Timeouts != 1 || res.Failures[0][1] != TimedOut {
		t.Errorf("Stats = %+v, want 1 timeout", res.Stats[0])
	}
}

func TestEvaluatorErrors(t *testing.T) {
	ev := &Evaluator{Rewards: []Named{{"nil", 1, nil}}}
	if _, err := ev.Evaluate(context.Background(), samples("a")); err == nil || !strings.Contains(err.Error(), `reward 0 ("nil") has a nil Scorer`) {
		t.Errorf("nil scorer: err = %v", err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("stop now")
	cancel(cause)
	ev = &Evaluator{Rewards: []Named{{"one", 1, Func(func(_, _, _ string) float64 { return 1 })}}}
	if _, err := ev.Evaluate(ctx, samples("a", "b")); !errors.Is(err, cause) {
		t.Errorf("canceled: err = %v, want %v", err, cause)
	}
}

func TestEvaluatorEmpty(t *testing.T) {
	ev := &Evaluator{Rewards: []Named{{"one", 1, Func(func(_, _, _ string) float64 { return 1 })}}}
	res, err := ev.Evaluate(context.Background(), nil)
	if err != nil || len(res.Totals) != 0 || res.Stats[0].Mean != 0 {
		t.Errorf("empty batch: %+v, %v", res, err)
	}
}

// batchFunc is a BatchScorer for tests: f scores the whole batch; calls
// counts ScoreBatch calls.
type batchFunc struct {
	f     func(ctx context.Context, s []Sample) ([]float64, error)
	calls int
}

func (b *batchFunc) Score(Sample) float64 { panic("Score called on a BatchScorer") }
func (b *batchFunc) ScoreBatch(ctx context.Context, s []Sample) ([]float64, error) {
	b.calls++
	return b.f(ctx, s)
}

func TestEvaluatorBatchScorer(t *testing.T) {
	lengths := func(_ context.Context, s []Sample) ([]float64, error) {
		out := make([]float64, len(s))
		for i, x := range s {
			out[i] = float64(len(x.Completion))
		}
		out[1] = math.NaN()
		return out, nil
	}
	for _, c := range []struct {
		name  string
		f     func(ctx context.Context, s []Sample) ([]float64, error)
		want  []Failure
		score float64 // of sample 0
	}{
		{"scores", lengths, []Failure{OK, NonFinite, OK}, 1},
		{"error", func(context.Context, []Sample) ([]float64, error) { return nil, errors.New("boom") }, []Failure{Errored, Errored, Errored}, 0},
		{"short", func(context.Context, []Sample) ([]float64, error) { return []float64{1}, nil }, []Failure{Errored, Errored, Errored}, 0},
		{"panic", func(context.Context, []Sample) ([]float64, error) { panic("bug") }, []Failure{Panicked, Panicked, Panicked}, 0},
		{"timeout", func(ctx context.Context, s []Sample) ([]float64, error) {
			<-ctx.Done() // stops when the evaluator gives up
			return make([]float64, len(s)), nil
		}, []Failure{TimedOut, TimedOut, TimedOut}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &batchFunc{f: c.f}
			ev := &Evaluator{Timeout: 20 * time.Millisecond, Rewards: []Named{
				{Name: "plain", Weight: 1, Scorer: Func(func(_, _, _ string) float64 { return 2 })},
				{Name: "batch", Weight: 3, Scorer: b},
			}}
			res, err := ev.Evaluate(context.Background(), samples("a", "bb", "ccc"))
			if err != nil {
				t.Fatal(err)
			}
			if b.calls != 1 {
				t.Errorf("ScoreBatch called %d times, want once", b.calls)
			}
			for i, f := range c.want {
				if res.Failures[1][i] != f {
					t.Errorf("sample %d: %v, want %v", i, res.Failures[1][i], f)
				}
				if f != OK && res.Scores[1][i] != 0 {
					t.Errorf("sample %d failed but scored %v", i, res.Scores[1][i])
				}
			}
			if got := res.Totals[0]; !near(got, 2+3*c.score) {
				t.Errorf("total %v, want %v", got, 2+3*c.score)
			}
			st := res.Stats[1]
			if n := st.Failures(); n != len(c.want)-countOK(c.want) {
				t.Errorf("stats count %d failures (%+v)", n, st)
			}
		})
	}
	if got := Errored.String(); got != "error" {
		t.Errorf("Errored.String() = %q", got)
	}
}

func countOK(fs []Failure) int {
	n := 0
	for _, f := range fs {
		if f == OK {
			n++
		}
	}
	return n
}
