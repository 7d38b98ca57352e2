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

// Name is the signal's name as a shell writes it: "SIGINT", "SIGTERM".
func (e *SignalError) Name() string {
	switch e.Signal {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return e.Signal.String()
}

// Context returns a context cancelled, with a *SignalError as its cause,
// by the first SIGINT or SIGTERM. After that first signal the process no
// longer catches them: a second one ends it at once, by the signal's
// default action. stop releases the signals; call it when done.
func Context(parent context.Context) (ctx context.Context, stop func()) {
	return ContextWithSecond(parent, nil)
}

// ContextWithSecond is Context, except that a second SIGINT or SIGTERM,
// caught while the command still works after the first (saving, or stuck
// in I/O or a hung call that never sees the cancellation), calls second
// with it and with what the command last declared unsaved (SetUnsaved;
// "" when nothing was). second is expected to end the process (os.Exit
// with the signal's ExitCode); a nil second is Context.
func ContextWithSecond(parent context.Context, second func(sig *SignalError, unsaved string)) (ctx context.Context, stop func()) {
	st := &state{}
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, stateKey{}, st))
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, Signals()...)
	done := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case sig := <-ch:
			if second == nil {
				signal.Stop(ch)
			}
			cancel(&SignalError{Signal: sig})
		case <-done:
			return
		}
		if second == nil {
			return
		}
		select {
		case sig := <-ch:
			second(&SignalError{Signal: sig}, st.get())
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		once.Do(func() { close(done) })
		cancel(context.Canceled)
	}
}

// state is what a command declared unsaved, for ContextWithSecond's
// second signal.
type state struct {
	mu      sync.Mutex
	unsaved string
}

func (s *state) get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unsaved
}

type stateKey struct{}

// SetUnsaved records, in a context made by ContextWithSecond (other
// contexts ignore it), what a second signal ending the process now would
// leave unsaved, in words for the user: "the steps since the newest
// checkpoint in runs/x". Call it again as the command's work moves on.
func SetUnsaved(ctx context.Context, what string) {
	if s, ok := ctx.Value(stateKey{}).(*state); ok {
		s.mu.Lock()
		s.unsaved = what
		s.mu.Unlock()
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
