//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package exkit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// mainEnv, when set, makes the test binary run Main with an example that
// waits for its context to end, in place of the tests.
const mainEnv = "EXKIT_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) != "" {
		os.Args = os.Args[:1]
		Main(struct{}{}, func(*struct{}, []string) error { return nil }, func(ctx context.Context, _ struct{}) error {
			fmt.Println("ready")
			<-ctx.Done()
			fmt.Println("interrupted; checkpoint saved")
			return nil
		})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMainSignals: SIGINT and SIGTERM cancel the example's context, the
// example finishes (saving, in a real one), and the process exits with
// 128 + the signal's number. Before, SIGTERM killed the process at once
// and SIGINT exited 0.
func TestMainSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), mainEnv+"=1")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			r := bufio.NewReader(stdout)
			if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
				t.Fatalf("first line %q, %v", line, err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			rest, _ := r.ReadString('\n')
			err = cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 128+int(sig) {
				t.Fatalf("exit: %v, want status %d", err, 128+int(sig))
			}
			if !strings.Contains(rest, "checkpoint saved") {
				t.Errorf("the example did not finish its work: %q", rest)
			}
		})
	}
}
