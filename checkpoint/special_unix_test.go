//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package checkpoint_test

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/grpokit/grpokit/checkpoint"
)

// TestLatestSkipsSpecialFiles: a checkpoint whose file was replaced by a
// named pipe, or by a link to /dev/zero, is broken: Latest names it, skips
// it, and returns the older one, without opening the special file. Before,
// hashing opened the pipe (blocking until a writer came) or read /dev/zero
// without end.
func TestLatestSkipsSpecialFiles(t *testing.T) {
	for _, kind := range []string{"fifo", "symlink to /dev/zero"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			older := write(t, dir, 1, "one", nil)
			newer := write(t, dir, 2, "two", nil)
			p := filepath.Join(newer, "state.json")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			var err error
			if kind == "fifo" {
				err = syscall.Mkfifo(p, 0o644)
			} else {
				err = os.Symlink("/dev/zero", p)
			}
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			done := make(chan struct{})
			var got string
			go func() {
				defer close(done)
				got, err = checkpoint.Latest(dir, nil, slog.New(slog.NewTextHandler(&log, nil)))
			}()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("Latest did not return in a minute")
			}
			if err != nil || got != older {
				t.Fatalf("Latest = %q, %v; want %q", got, err, older)
			}
			want := "state.json: not a regular file (a named pipe)"
			if kind != "fifo" {
				want = "state.json: not a regular file (a symbolic link)"
			}
			if !strings.Contains(log.String(), want) || !strings.Contains(log.String(), "checkpoint-2") {
				t.Errorf("log lacks %q for checkpoint-2:\n%s", want, log.String())
			}
			if err := checkpoint.Verify(newer, false); !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Errorf("Verify without hashing: %v, want ErrCorrupt", err)
			}
		})
	}
}
