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
