package interrupt

import (
	"context"
	"os"
	"syscall"
	"testing"
)

func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		sig  os.Signal
		want int
	}{{os.Interrupt, 130}, {syscall.SIGTERM, 143}} {
		if got := (&SignalError{Signal: c.sig}).ExitCode(); got != c.want {
			t.Errorf("%v: exit code %d, want %d", c.sig, got, c.want)
		}
	}
}

func TestStopIsNotASignal(t *testing.T) {
	ctx, stop := Context(context.Background())
	stop()
	stop()
	if _, caught := Caught(ctx); caught || ctx.Err() == nil {
		t.Errorf("after stop: caught %v, err %v", caught, ctx.Err())
	}
}
