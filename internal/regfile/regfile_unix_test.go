//go:build unix

package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSpecialFiles: a named pipe (no writer: a plain open would wait for
// one for ever), a link to /dev/zero (reads without end) and a device are
// refused at once, each error saying what the file is.
func TestSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, kind string }{{fifo, "a named pipe"}, {zero, "a device"}, {"/dev/null", "a device"}} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadFile(c.path, 1<<20)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), c.kind) {
				t.Errorf("ReadFile(%s) = %v; want ErrNotRegular naming %s", c.path, err, c.kind)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("ReadFile(%s) did not return in 30 s", c.path)
		}
	}
}
