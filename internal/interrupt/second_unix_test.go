//go:build unix

package interrupt

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// TestSecondSignal: the first SIGTERM cancels the context; the second
// calls second with what the command declared unsaved last.
func TestSecondSignal(t *testing.T) {
	got := make(chan string, 1)
	ctx, stop := ContextWithSecond(context.Background(), func(sig *SignalError, unsaved string) {
		got <- sig.Name() + ": " + unsaved
	})
	defer stop()
	SetUnsaved(ctx, "step 3")
	SetUnsaved(context.Background(), "ignored") // not a context of ContextWithSecond
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the first SIGTERM did not cancel the context")
	}
	if sig, caught := Caught(ctx); !caught || sig.Name() != "SIGTERM" {
		t.Fatalf("Caught = %v, %v", sig, caught)
	}
	SetUnsaved(ctx, "the steps since checkpoint-2")
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if want := "SIGTERM: the steps since checkpoint-2"; s != want {
			t.Errorf("second got %q, want %q", s, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second SIGTERM did not reach second")
	}
}
