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
