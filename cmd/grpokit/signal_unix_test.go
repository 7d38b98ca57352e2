//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/grpokit/grpokit/checkpoint"
)

// mainArgsEnv, when set, makes the test binary run main with these
// arguments (separated by \x1f) instead of the tests: a test can then
// signal a real grpokit process.
const mainArgsEnv = "GRPOKIT_TEST_MAIN_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(mainArgsEnv); args != "" {
		os.Args = append([]string{"grpokit"}, strings.Split(args, "\x1f")...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startMain starts grpokit with args in a process of its own (the test
// binary, see TestMain), its stdout and stderr both into the returned
// buffer; the test kills it at its end.
func startMain(t *testing.T, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), mainArgsEnv+"="+strings.Join(args, "\x1f"))
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, out
}

// waitExit waits up to limit for cmd to end and returns its exit status;
// it fails the test (the process is killed at the test's end) when cmd
// is still running then.
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration, out *syncBuffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("grpokit did not end in %s:\n%s", limit, out.String())
	}
	return 0
}

// syncBuffer is a bytes.Buffer a process's output and a test can share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestSignalSavesAndExits sends SIGINT and SIGTERM to a training grpokit
// once it has logged two steps: each must save a checkpoint of the last
// completed step, print how to resume, and exit with 128 + the signal's
// number. Before, SIGTERM killed the run without a checkpoint and SIGINT
// exited 0 without final/.
func TestSignalSavesAndExits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts training processes")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cfg := toyRun(t, dir, false, 1_000_000)
			runDir := filepath.Join(dir, "run")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), mainArgsEnv+"=train\x1f-config\x1f"+cfg)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			// Signal once the run has logged two steps: the moment comes from
			// the run's own progress, not from a clock.
			logged := 0
			for deadline := time.Now().Add(5 * time.Minute); logged < 2; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("no two metrics lines in 5 minutes:\n%s", out.String())
				}
				b, _ := os.ReadFile(filepath.Join(runDir, checkpoint.MetricsFile))
				logged = bytes.Count(b, []byte("\n"))
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 128+int(sig) {
				t.Fatalf("exit: %v, want status %d\n%s", err, 128+int(sig), out.String())
			}
			if !strings.Contains(out.String(), "interrupted after") || !strings.Contains(out.String(), "resumes it") {
				t.Errorf("output lacks the interruption message:\n%s", out.String())
			}
			newest := -1
			entries, _ := os.ReadDir(runDir)
			for _, e := range entries {
				if n, ok := strings.CutPrefix(e.Name(), "checkpoint-"); ok && e.IsDir() {
					if k, err := strconv.Atoi(n); err == nil && k > newest {
						newest = k
					}
				}
			}
			if newest < logged {
				t.Errorf("newest checkpoint is step %d, want at least %d (the steps logged before the signal):\n%s", newest, logged, out.String())
			}
		})
	}
}

// TestSecondSignalEndsBlockedRun: the run's stdout is a pipe nobody reads
// any more (a stalled "| less", a full log pipe), so the run blocks
// writing a progress line and the first signal's save never comes. A
// second signal of the same kind ends the process at once with 130 or 143
// and a line on stderr saying what was not saved. Before, the first
// signal released the signals and the second one killed the process by
// its default action: no status a shell would show as 130/143 to Go, and
// no word of what was lost.
func TestSecondSignalEndsBlockedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts training processes")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cfg := toyRun(t, dir, false, 1_000_000)
			runDir := filepath.Join(dir, "run")
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), mainArgsEnv+"=train\x1f-config\x1f"+cfg)
			stderr := &syncBuffer{}
			cmd.Stdout, cmd.Stderr = w, stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			t.Cleanup(func() { cmd.Process.Kill(); <-done })
			// Read stdout until the run has logged two steps, then stop
			// reading and fill the pipe: the run's next write blocks.
			lines := metricsLines(t, runDir, r, 2)
			go w.Write(make([]byte, 1<<20)) // blocks once the pipe is full, until r closes
			// Blocked: no new metrics line for two seconds.
			for n, since := lines, time.Now(); time.Since(since) < 2*time.Second; time.Sleep(50 * time.Millisecond) {
				if k := countLines(runDir); k != n {
					n, since = k, time.Now()
				}
				if time.Since(since) > time.Minute {
					t.Fatal("the run does not block")
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
				t.Fatalf("the run ended on the first signal:\n%s", stderr.String())
			case <-time.After(time.Second):
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("the run did not end on the second signal:\n%s", stderr.String())
			}
			code := cmd.ProcessState.ExitCode()
			name := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[sig]
			want := "grpokit: second " + name + ": stopped at once, without finishing; not saved: the steps trained since the newest complete checkpoint in " + runDir
			if code != 128+int(sig) || !strings.Contains(stderr.String(), want) {
				t.Errorf("exit status %d, want %d, and stderr with %q:\n%s", code, 128+int(sig), want, stderr.String())
			}
		})
	}
}

// metricsLines reads r (the run's stdout) until metrics.jsonl in runDir
// has at least n lines, and returns how many it has.
func metricsLines(t *testing.T, runDir string, r *os.File, n int) int {
	t.Helper()
	buf := make([]byte, 4096)
	for deadline := time.Now().Add(5 * time.Minute); ; {
		if k := countLines(runDir); k >= n {
			return k
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %d metrics lines in 5 minutes", n)
		}
		r.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		r.Read(buf)
	}
}

// countLines counts the lines of runDir's metrics.jsonl.
func countLines(runDir string) int {
	b, _ := os.ReadFile(filepath.Join(runDir, checkpoint.MetricsFile))
	return bytes.Count(b, []byte("\n"))
}
