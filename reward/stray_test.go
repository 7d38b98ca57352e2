package reward

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// hang is a reward that blocks until release is closed, counting the calls
// that entered it.
type hang struct {
	release chan struct{}
	calls   atomic.Int64
}

func (h *hang) Score(Sample) float64 {
	h.calls.Add(1)
	<-h.release
	return 1
}

// TestStrayCallsBounded: a reward that hangs past its timeout is not
// called again while MaxStray of its calls are still running; the samples
// it skips score 0 as Skipped failures and Stats.Stray reports the calls
// still running. Once they return, the reward is called again. Before, each
// sample started a call that hung, one goroutine (and a core, if it spins)
// per sample and step.
func TestStrayCallsBounded(t *testing.T) {
	h := &hang{release: make(chan struct{})}
	ev := &Evaluator{Rewards: []Named{{Name: "hang", Weight: 1, Scorer: h}, {Name: "ok", Weight: 1, Scorer: ScorerFunc(func(Sample) float64 { return 1 })}},
		Timeout: time.Millisecond, Workers: 1, MaxStray: 2}
	samples := make([]Sample, 10)
	res, err := ev.Evaluate(context.Background(), samples)
	if err != nil {
		t.Fatal(err)
	}
	st := res.Stats[0]
	if st.Timeouts != 2 || st.Skipped != 8 || st.Stray != 2 || st.Failures() != 10 || h.calls.Load() != 2 {
		t.Fatalf("stats %+v after %d calls; want 2 timeouts, 8 skipped, 2 stray, 2 calls", st, h.calls.Load())
	}
	if ok := res.Stats[1]; ok.Failures() != 0 || ok.Mean != 1 {
		t.Errorf("the other reward: %+v", ok)
	}
	for i, f := range res.Failures[0][2:] {
		if f != Skipped || res.Scores[0][i+2] != 0 {
			t.Errorf("sample %d: %v, %v", i+2, f, res.Scores[0][i+2])
		}
	}
	// A second batch while they still hang calls the reward no more.
	if res, err = ev.Evaluate(context.Background(), samples); err != nil || res.Stats[0].Skipped != 10 || h.calls.Load() != 2 {
		t.Fatalf("second batch: %+v, %d calls, %v", res.Stats[0], h.calls.Load(), err)
	}
	close(h.release)
	for ev.Stray(0) != 0 {
		runtime.Gosched()
	}
	ev.Timeout = time.Minute // the reward now returns at once
	if res, err = ev.Evaluate(context.Background(), samples); err != nil || res.Stats[0].Failures() != 0 || res.Stats[0].Mean != 1 {
		t.Fatalf("after the stray calls returned: %+v, %v", res.Stats[0], err)
	}
}
