//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
)

// TestTwoStartsOneFolder starts two trains on one output folder at the
// same moment, several times: one runs, the other is refused before it
// writes anything (the folder's lock is taken first), and the run that
// trained resumes afterwards. Before, both passed the used-folder check,
// the loser rewrote initial-model under the winner, and the winner's
// -resume was refused.
func TestTwoStartsOneFolder(t *testing.T) {
	for round := range 5 {
		dir := t.TempDir()
		cfg := toyRun(t, dir, false, 2)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = run(context.Background(), []string{"train", "-quiet", "-config", cfg}, io.Discard)
			}()
		}
		close(start)
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, checkpoint.ErrLocked), errors.Is(err, checkpoint.ErrOutputDirInUse):
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d runs trained (%v), want exactly one", round, ok, errs)
		}
		if err := run(context.Background(), []string{"train", "-quiet", "-config", cfg, "-resume", "-max-steps", "3"}, io.Discard); err != nil {
			t.Fatalf("round %d: the run that trained does not resume: %v", round, err)
		}
	}
}
