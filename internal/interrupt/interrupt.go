// Package interrupt turns SIGINT (Ctrl-C) and SIGTERM (docker stop,
// Kubernetes, Slurm, timeout) into the cancellation of a context, so that
// a command stops training after saving its last completed step, and
// gives the exit status a shell gives a process such a signal ends:
// 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
package interrupt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Signals are the signals Context catches.
func Signals() []os.Signal { return []os.Signal{os.Interrupt, syscall.SIGTERM} }

// SignalError is the cause of a context that Context cancelled.
type SignalError struct{ Signal os.Signal }

func (e *SignalError) Error() string { return fmt.Sprintf("interrupted by %v", e.Signal) }

// ExitCode is 128 + the signal's number, as shells report it.
func (e *SignalError) ExitCode() int {
	if s, ok := e.Signal.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// Context returns a context cancelled, with a *SignalError as its cause,
// by the first SIGINT or SIGTERM. After that first signal the process no
// longer catches them: a second one ends it at once. stop releases the
// signals; call it when done.
func Context(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, Signals()...)
	done := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case sig := <-ch:
			signal.Stop(ch)
			cancel(&SignalError{Signal: sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		once.Do(func() { close(done) })
		cancel(context.Canceled)
	}
}

// Caught returns the signal that cancelled ctx, if a signal did.
func Caught(ctx context.Context) (*SignalError, bool) {
	var e *SignalError
	if errors.As(context.Cause(ctx), &e) {
		return e, true
	}
	return nil, false
}
