//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
)

// TestTrainBesideRunningTrainer: while another process holds the run's
// output folder (its flock on .grpokit.lock, the trainer's protocol), a
// second train — fresh or -resume — is refused before it writes or
// evaluates anything.
func TestTrainBesideRunningTrainer(t *testing.T) {
	dir := t.TempDir()
	cfg := toyRun(t, dir, false, 1)
	runDir := filepath.Join(dir, "run")
	if err := run(context.Background(), []string{"train", "-quiet", "-config", cfg}, io.Discard); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(runDir, ".grpokit.lock")
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the finished run left its lock file (%v)", err)
	}
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_RDWR, 0o644) // the running trainer
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	base := readFile(t, cfg)
	cases := []struct {
		name   string
		args   []string
		config string // appended to the run's config
	}{
		{"fresh, overwrite_output_dir", nil, "overwrite_output_dir: true\n"},
		{"resumed", []string{"-resume", "-max-steps", "2"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(cfg, []byte(base+c.config), 0o644); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			err := run(context.Background(), append([]string{"train", "-quiet", "-config", cfg}, c.args...), &out)
			if !errors.Is(err, checkpoint.ErrLocked) || out.Len() > 0 {
				t.Errorf("err = %v, output %q; want ErrOutputDirLocked and nothing done", err, out.String())
			}
		})
	}
}
