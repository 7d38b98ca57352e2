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

// TestOpenAppendFIFO: appending to a named pipe with no reader is refused
// at once (a plain open for writing waits for a reader).
func TestOpenAppendFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "metrics.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := OpenAppend(fifo, 0o644)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo) {
			t.Errorf("OpenAppend(fifo) = %v; want an error naming it", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("OpenAppend(fifo) did not return in 30 s")
	}
	p := filepath.Join(t.TempDir(), "a.jsonl")
	for _, line := range []string{"1\n", "2\n"} {
		f, err := OpenAppend(p, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "1\n2\n" {
		t.Errorf("appended %q, %v; want \"1\\n2\\n\"", b, err)
	}
}

// TestRegularFileBlocking: a regular file comes back without O_NONBLOCK,
// as a plain open gives it.
func TestRegularFileBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func() (*os.File, error){
		"Open":       func() (*os.File, error) { return Open(p) },
		"OpenAppend": func() (*os.File, error) { return OpenAppend(p, 0o644) },
	} {
		f, err := open()
		if err != nil {
			t.Fatal(err)
		}
		c, err := f.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var flags uintptr
		var errno syscall.Errno
		c.Control(func(fd uintptr) { flags, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0) })
		f.Close()
		if errno != 0 || flags&syscall.O_NONBLOCK != 0 {
			t.Errorf("%s: flags %#x (errno %v): O_NONBLOCK still set", name, flags, errno)
		}
	}
}
