package reward

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
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

// DefaultMaxStray is the number of calls of one reward that may still be
// running past their timeout before an Evaluator whose MaxStray is zero
// stops calling that reward.
const DefaultMaxStray = 2

// ContextScorer is an optional interface of a Scorer: Call gives
// ScoreContext a context that is cancelled when the call times out (or
// its own context ends), so a reward that watches it can stop. A Scorer
// without it cannot be stopped (Go has no way to end a goroutine): a call
// that hangs keeps its goroutine, and a core if it spins, until it
// returns.
//
// What a reward must do, ContextScorer or not:
//   - return within the Evaluator's Timeout; a reward that runs an
//     interpreter, a solver, a sandbox or a network call implements
//     ContextScorer and returns as soon as ctx is done (pass ctx to
//     exec.CommandContext, http.NewRequestWithContext, or check ctx.Err()
//     in its loops), giving any score: it is discarded;
//   - be safe for concurrent use: calls run on several goroutines at once;
//   - not keep resources past its return: a call that outlives its
//     timeout still counts against the reward (see Evaluator.MaxStray).
//
// A reward that times out scores 0 for that sample; while MaxStray of its
// calls are still running, the Evaluator does not call it again and those
// samples score 0 as Skipped failures, so a reward that hangs costs at
// most MaxStray goroutines, not one per sample.
type ContextScorer interface {
	Scorer
	ScoreContext(ctx context.Context, s Sample) float64
}

// BatchScorer is an optional interface of a Scorer that scores a whole
// batch in one call, such as a reward model that runs the batch as one
// forward pass. An Evaluator calls ScoreBatch once per Evaluate with all
// the samples (and never Score); it must return one score per sample, in
// order, and should stop when ctx ends. An error fails the whole batch
// (every sample scores 0, counted as Errored); a non-finite score fails
// its sample only.
type BatchScorer interface {
	Scorer
	ScoreBatch(ctx context.Context, samples []Sample) ([]float64, error)
}

// Failure says why one reward call did not give a usable score.
type Failure int

// The kinds of Failure. A failed call scores 0.
const (
	OK        Failure = iota // the call returned a finite score
	Panicked                 // the reward panicked
	NonFinite                // the reward returned NaN, ±Inf or a score beyond ±MaxScore
	TimedOut                 // the reward did not return within the timeout
	Skipped                  // not called: MaxStray calls of the reward were still running past their timeout
	Errored                  // a BatchScorer returned an error (or the wrong number of scores)
)

// String returns "ok", "panic", "nonfinite", "timeout", "skipped" or "error".
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
	case Skipped:
		return "skipped"
	case Errored:
		return "error"
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
	// Timeout bounds each single call of a reward (a BatchScorer's call
	// gets Timeout times the number of samples). Default DefaultTimeout.
	Timeout time.Duration
	// Workers bounds how many reward calls run at once. Default GOMAXPROCS.
	Workers int
	// MaxStray bounds, per reward, the calls still running after their
	// timeout: a reward with that many is not called again until one
	// returns (its samples score 0, counted as Skipped). Calls other
	// workers had started when the bound was reached may still time out,
	// so up to MaxStray + Workers − 1 can be running. Default
	// DefaultMaxStray. The count lives with the Evaluator, across batches.
	MaxStray int

	strays atomic.Pointer[strayCounts]
}

// strayCounts holds, per reward, the calls running past their timeout.
type strayCounts struct{ n []atomic.Int64 }

// strayCounts returns the Evaluator's counts, made on first use.
func (e *Evaluator) strayCounts() *strayCounts {
	for {
		if c := e.strays.Load(); c != nil && len(c.n) >= len(e.Rewards) {
			return c
		}
		c := &strayCounts{n: make([]atomic.Int64, len(e.Rewards))}
		old := e.strays.Load()
		if old != nil && len(old.n) >= len(e.Rewards) {
			return old
		}
		if e.strays.CompareAndSwap(old, c) {
			return c
		}
	}
}

// Stray returns how many calls of reward r (an index into Rewards) are
// still running past their timeout.
func (e *Evaluator) Stray(r int) int {
	c := e.strays.Load()
	if c == nil || r < 0 || r >= len(c.n) {
		return 0
	}
	return int(c.n[r].Load())
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
	Skipped       int // samples not scored: the reward had MaxStray calls still running
	Stray         int // calls of this reward still running past their timeout after the batch
	Errors        int // samples of a BatchScorer's batch that returned an error
}

// Failures returns the number of failed calls of any kind.
func (s Stats) Failures() int { return s.Panics + s.NonFinite + s.Timeouts + s.Skipped + s.Errors }

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
	maxStray := e.MaxStray
	if maxStray <= 0 {
		maxStray = DefaultMaxStray
	}
	strays := e.strayCounts()
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
	// Batch rewards run once each, beside the workers.
	perSample := make([]int, 0, nr)
	for r, nd := range e.Rewards {
		bs, ok := nd.Scorer.(BatchScorer)
		if !ok {
			perSample = append(perSample, r)
			continue
		}
		if ns == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if strays.n[r].Load() >= int64(maxStray) {
				for i := range ns {
					res.Failures[r][i] = Skipped
				}
				return
			}
			vs, fs := callBatch(ctx, bs, samples, timeout*time.Duration(ns), &strays.n[r])
			for i := range vs {
				vs[i], fs[i] = weighted(nd.Weight, vs[i], fs[i])
			}
			res.Scores[r], res.Failures[r] = vs, fs
		}()
	}
	for w := 0; w < min(workers, len(perSample)*ns); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				// Each (r, i) cell is written by exactly one worker.
				if strays.n[j.r].Load() >= int64(maxStray) {
					res.Scores[j.r][j.i], res.Failures[j.r][j.i] = 0, Skipped
					continue
				}
				v, f := call(ctx, e.Rewards[j.r].Scorer, samples[j.i], timeout, &strays.n[j.r])
				res.Scores[j.r][j.i], res.Failures[j.r][j.i] = weighted(e.Rewards[j.r].Weight, v, f)
			}
		}()
	}
feed:
	for _, r := range perSample {
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
			case Skipped:
				st.Skipped++
			case Errored:
				st.Errors++
			}
		}
		st.Stray = int(strays.n[r].Load())
		st.Mean, st.Std = meanStd(applied)
		if len(applied) == 0 && ns > 0 {
			st.Mean, st.Std = math.NaN(), math.NaN()
		}
		res.Stats[r] = st
	}
	return res, nil
}

// weighted returns score v and its Failure f, or 0 and NonFinite when
// the score is usable but weight·v would overflow the total.
func weighted(weight, v float64, f Failure) (float64, Failure) {
	if f == OK && !IsNotApplicable(v) && !(math.Abs(weight*v) <= MaxScore) {
		return 0, NonFinite
	}
	return v, f
}

// Call runs s.Score(sample) in its own goroutine and returns its score, or
// 0 and the kind of failure when it panics, returns NaN/±Inf or a score
// beyond ±MaxScore, or does not return within timeout (or before ctx
// ends, which counts as a timeout). A call that times out keeps running in
// the background; Call does not wait for it. When s is a ContextScorer, its
// context is cancelled as Call returns, so it can stop.
func Call(ctx context.Context, s Scorer, sample Sample, timeout time.Duration) (float64, Failure) {
	return call(ctx, s, sample, timeout, nil)
}

// call is Call that, when stray is not nil, counts in it a call that
// outlives its timeout until that call returns.
func call(ctx context.Context, s Scorer, sample Sample, timeout time.Duration, stray *atomic.Int64) (float64, Failure) {
	v, panicked, timedOut := guarded(ctx, timeout, stray, func(callCtx context.Context) float64 {
		if cs, ok := s.(ContextScorer); ok {
			return cs.ScoreContext(callCtx, sample)
		}
		return s.Score(sample)
	})
	switch {
	case timedOut:
		return 0, TimedOut
	case panicked:
		return 0, Panicked
	case IsNotApplicable(v):
		return v, OK
	case !(math.Abs(v) <= MaxScore): // NaN, ±Inf, or overflowing when summed
		return 0, NonFinite
	}
	return v, OK
}

// CallBatch runs s.ScoreBatch(ctx, samples) in its own goroutine and
// returns a score and a Failure per sample: the whole batch Panicked,
// Errored (an error, or not one score per sample) or TimedOut (past
// timeout, or ctx ended first), else each score OK or NonFinite (NaN,
// ±Inf or beyond ±MaxScore), which scores 0. The context ScoreBatch gets
// is cancelled as CallBatch returns; a call that overran keeps running
// until it notices.
func CallBatch(ctx context.Context, s BatchScorer, samples []Sample, timeout time.Duration) ([]float64, []Failure) {
	return callBatch(ctx, s, samples, timeout, nil)
}

// callBatch is CallBatch that, when stray is not nil, counts in it a call
// that outlives its timeout until that call returns.
func callBatch(ctx context.Context, s BatchScorer, samples []Sample, timeout time.Duration, stray *atomic.Int64) ([]float64, []Failure) {
	type outcome struct {
		vs  []float64
		err error
	}
	o, panicked, timedOut := guarded(ctx, timeout, stray, func(callCtx context.Context) outcome {
		vs, err := s.ScoreBatch(callCtx, samples)
		return outcome{vs, err}
	})
	vs, fs := make([]float64, len(samples)), make([]Failure, len(samples))
	all := func(f Failure) ([]float64, []Failure) {
		for i := range fs {
			fs[i] = f
		}
		return vs, fs
	}
	switch {
	case timedOut:
		return all(TimedOut)
	case panicked:
		return all(Panicked)
	case o.err != nil || len(o.vs) != len(samples):
		return all(Errored)
	}
	for i, v := range o.vs {
		if math.Abs(v) <= MaxScore || IsNotApplicable(v) {
			vs[i] = v
		} else {
			fs[i] = NonFinite
		}
	}
	return vs, fs
}

// guarded runs f in its own goroutine with a context that is cancelled as
// guarded returns, and returns f's result, or panicked when f panicked, or
// timedOut when f did not return within timeout or before ctx ended. A
// call that times out keeps running in the background (guarded does not
// wait for it); when stray is not nil it is counted there until it
// returns.
func guarded[T any](ctx context.Context, timeout time.Duration, stray *atomic.Int64, f func(context.Context) T) (v T, panicked, timedOut bool) {
	// state: 0 running, 1 returned in time, 2 abandoned (counted in stray).
	var state atomic.Int32
	type outcome struct {
		v        T
		panicked bool
	}
	done := make(chan outcome, 1) // buffered: an abandoned call never blocks
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel() // stops a call that overran, if it watches its context
	go func() {
		defer func() {
			if !state.CompareAndSwap(0, 1) && stray != nil {
				stray.Add(-1) // an abandoned call returns at last
			}
		}()
		defer func() {
			if recover() != nil {
				done <- outcome{panicked: true}
			}
		}()
		done <- outcome{v: f(callCtx)}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case o := <-done:
		return o.v, o.panicked, false
	case <-timer.C:
	case <-ctx.Done():
	}
	if stray != nil {
		stray.Add(1)
		if !state.CompareAndSwap(0, 2) {
			stray.Add(-1) // it returned meanwhile
		}
	}
	return v, false, true
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
