package reward

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"
)

// DefaultTimeout is the per-call time limit an Evaluator uses when its
// Timeout is zero.
const DefaultTimeout = 10 * time.Second

// MaxScore bounds the magnitude of a usable score, raw and weighted: a
// larger one (math.MaxFloat64, say) is finite but overflows to ±Inf when a
// group of scores is summed or squared for a standard deviation, so it
// counts as a NonFinite failure and scores 0.
const MaxScore = 1e150

// ContextScorer is an optional interface of a Scorer: Call gives
// ScoreContext a context that is cancelled when the call times out (or
// its own context ends), so a reward that watches it can stop. A Scorer
// without it cannot be stopped (Go has no way to end a goroutine): a call
// that hangs keeps its goroutine until it returns.
type ContextScorer interface {
	Scorer
	ScoreContext(ctx context.Context, s Sample) float64
}

// Failure says why one reward call did not give a usable score.
type Failure int

// The kinds of Failure. A failed call scores 0.
const (
	OK        Failure = iota // the call returned a finite score
	Panicked                 // the reward panicked
	NonFinite                // the reward returned NaN, ±Inf or a score beyond ±MaxScore
	TimedOut                 // the reward did not return within the timeout
)

// String returns "ok", "panic", "nonfinite" or "timeout".
func (f Failure) String() string {
	switch f {
	case OK:
		return "ok"
	case Panicked:
		return "panic"
	case NonFinite:
		return "nonfinite"
	case TimedOut:
		return "timeout"
	}
	return fmt.Sprintf("Failure(%d)", int(f))
}

// Evaluator scores batches of samples with a list of named rewards,
// concurrently and safely (see the package doc). A zero Timeout means
// DefaultTimeout, a zero Workers means runtime.GOMAXPROCS(0). An Evaluator
// is safe for concurrent use once its fields are set.
type Evaluator struct {
	// Rewards are the rewards to run, in logging order. Names should be unique.
	Rewards []Named
	// Timeout bounds each single call of a reward. Default DefaultTimeout.
	Timeout time.Duration
	// Workers bounds how many reward calls run at once. Default GOMAXPROCS.
	Workers int
}

// Stats summarizes one reward over a batch, for logging.
type Stats struct {
	Name      string
	Mean      float64 // mean score over the batch, failures counted as 0
	Std       float64 // sample standard deviation (n-1), 0 for fewer than 2 samples
	Panics    int     // calls that panicked
	NonFinite int     // calls that returned NaN or ±Inf
	Timeouts  int     // calls that ran past the timeout
	// NotApplicable counts the samples the reward did not apply to (it
	// returned NotApplicable()); Mean and Std are then over the others
	// (TRL's nanmean and nanstd), NaN when it applied to none.
	NotApplicable int
}

// Failures returns the number of failed calls of any kind.
func (s Stats) Failures() int { return s.Panics + s.NonFinite + s.Timeouts }

// Result holds the scores of one batch.
type Result struct {
	// Scores[r][i] is reward r's score of sample i (0 where it failed,
	// NotApplicable() where the reward did not apply).
	Scores [][]float64
	// Failures[r][i] says whether and how that call failed.
	Failures [][]Failure
	// Totals[i] is the weighted sum over rewards of Scores[r][i].
	Totals []float64
	// Stats[r] summarizes reward r; Stats[r].Name is Rewards[r].Name.
	Stats []Stats
}

// Evaluate scores every sample with every reward and returns the scores,
// weighted totals and per-reward statistics. Failures of reward code
// (panic, NaN/Inf, timeout) never make it return an error: they score 0 and
// are counted. It returns an error only for an invalid Evaluator (a nil
// Scorer) or when ctx ends first (then with context.Cause(ctx)).
func (e *Evaluator) Evaluate(ctx context.Context, samples []Sample) (*Result, error) {
	for i, r := range e.Rewards {
		if r.Scorer == nil {
			return nil, fmt.Errorf("reward: evaluator: reward %d (%q) has a nil Scorer", i, r.Name)
		}
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	workers := e.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	nr, ns := len(e.Rewards), len(samples)
	res := &Result{
		Scores:   make([][]float64, nr),
		Failures: make([][]Failure, nr),
		Totals:   make([]float64, ns),
		Stats:    make([]Stats, nr),
	}
	for r := range e.Rewards {
		res.Scores[r] = make([]float64, ns)
		res.Failures[r] = make([]Failure, ns)
	}

	type job struct{ r, i int }
	jobs := make(chan job)
	var wg sync.WaitGroup
	for w := 0; w < min(workers, nr*ns); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				// Each (r, i) cell is written by exactly one worker.
				v, f := Call(ctx, e.Rewards[j.r].Scorer, samples[j.i], timeout)
				if w := e.Rewards[j.r].Weight * v; f == OK && !IsNotApplicable(v) && !(math.Abs(w) <= MaxScore) {
					v, f = 0, NonFinite // the weighted score would overflow the total
				}
				res.Scores[j.r][j.i], res.Failures[j.r][j.i] = v, f
			}
		}()
	}
feed:
	for r := 0; r < nr; r++ {
		for i := 0; i < ns; i++ {
			select {
			case jobs <- job{r, i}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("reward: evaluate: %w", context.Cause(ctx))
	}

	for r, nd := range e.Rewards {
		st := Stats{Name: nd.Name}
		applied := make([]float64, 0, ns)
		for i := 0; i < ns; i++ {
			v := res.Scores[r][i]
			if IsNotApplicable(v) {
				st.NotApplicable++ // left out of the total, as TRL's nansum
				continue
			}
			applied = append(applied, v)
			res.Totals[i] += nd.Weight * v
			switch res.Failures[r][i] {
			case Panicked:
				st.Panics++
			case NonFinite:
				st.NonFinite++
			case TimedOut:
				st.Timeouts++
			}
		}
		st.Mean, st.Std = meanStd(applied)
		if len(applied) == 0 && ns > 0 {
			st.Mean, st.Std = math.NaN(), math.NaN()
		}
		res.Stats[r] = st
	}
	return res, nil
}

// Call runs s.Score(sample) in its own goroutine and returns its score, or
// 0 and the kind of failure when it panics, returns NaN/±Inf or a score
// beyond ±MaxScore, or does not return within timeout (or before ctx
// ends, which counts as a timeout). A call that times out keeps running in
// the background; Call does not wait for it. When s is a ContextScorer, its
// context is cancelled as Call returns, so it can stop.
func Call(ctx context.Context, s Scorer, sample Sample, timeout time.Duration) (float64, Failure) {
	type outcome struct {
		v        float64
		panicked bool
	}
	done := make(chan outcome, 1) // buffered: an abandoned call never blocks
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel() // stops a ContextScorer that overran
	go func() {
		defer func() {
			if recover() != nil {
				done <- outcome{panicked: true}
			}
		}()
		var v float64
		if cs, ok := s.(ContextScorer); ok {
			v = cs.ScoreContext(callCtx, sample)
		} else {
			v = s.Score(sample)
		}
		done <- outcome{v: v}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case o := <-done:
		switch {
		case o.panicked:
			return 0, Panicked
		case IsNotApplicable(o.v):
			return o.v, OK
		case !(math.Abs(o.v) <= MaxScore): // NaN, ±Inf, or overflowing when summed
			return 0, NonFinite
		}
		return o.v, OK
	case <-timer.C:
		return 0, TimedOut
	case <-ctx.Done():
		return 0, TimedOut
	}
}

// meanStd returns the mean and the sample standard deviation (n-1) of xs.
func meanStd(xs []float64) (mean, std float64) {
	n := len(xs)
	if n == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if n < 2 {
		return mean, 0
	}
	ss := 0.0
	for _, x := range xs {
		d := x - mean
		ss += d * d
	}
	return mean, math.Sqrt(ss / float64(n-1))
}
