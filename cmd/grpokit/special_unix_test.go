//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestResumePastNamedPipe: a file train -resume reads is a named pipe.
// The newest checkpoint's trainer_state.json: the command names that
// checkpoint as broken, resumes the one before and finishes. The output
// folder's metrics.jsonl: the command stops with an error naming it. In
// neither case does anything open the pipe and wait for a writer. Before,
// the run-identity check (and the metrics repair) opened the pipe and the
// command hung, a SIGTERM did not end it.
func TestResumePastNamedPipe(t *testing.T) {
	for _, c := range []struct {
		name, pipe string // the pipe, under the output folder
		status     int
		want       []string
	}{
		{"trainer_state.json", "checkpoint-2/trainer_state.json", 0, []string{"checkpoint-2", "trainer_state.json: not a regular file (a named pipe)",
			"resumed from checkpoint-1", "trained 3 steps"}},
		{"metrics.jsonl", "metrics.jsonl", 1, []string{"metrics.jsonl: not a regular file (a named pipe)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := toyRun(t, dir, false, 2)
			if err := os.WriteFile(cfg, []byte(readFile(t, cfg)+"save_steps: 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			runDir := filepath.Join(dir, "run")
			if err := run(context.Background(), []string{"train", "-quiet", "-config", cfg}, &strings.Builder{}); err != nil {
				t.Fatal(err)
			}
			pipe := filepath.Join(runDir, c.pipe)
			if err := os.Remove(pipe); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(pipe, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd, out := startMain(t, "train", "-quiet", "-config", cfg, "-resume", "-max-steps", "3")
			if code := waitExit(t, cmd, time.Minute, out); code != c.status {
				t.Fatalf("exit status %d, want %d:\n%s", code, c.status, out.String())
			}
			text := strings.ReplaceAll(out.String(), runDir+string(filepath.Separator), "")
			for _, want := range c.want {
				if !strings.Contains(text, want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}
