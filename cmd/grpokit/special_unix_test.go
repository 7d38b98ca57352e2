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

// TestResumePastNamedPipe: the newest checkpoint's trainer_state.json is a
// named pipe. train -resume names that checkpoint as broken, resumes the
// one before and finishes; nothing opens the pipe and waits for a writer.
// Before, the run-identity check opened the pipe and the command hung (a
// SIGTERM did not end it).
func TestResumePastNamedPipe(t *testing.T) {
	dir := t.TempDir()
	cfg := toyRun(t, dir, false, 2)
	if err := os.WriteFile(cfg, []byte(readFile(t, cfg)+"save_steps: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	if err := run(context.Background(), []string{"train", "-quiet", "-config", cfg}, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(runDir, "checkpoint-2", "trainer_state.json")
	if err := os.Remove(state); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(state, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, out := startMain(t, "train", "-quiet", "-config", cfg, "-resume", "-max-steps", "3")
	if code := waitExit(t, cmd, time.Minute, out); code != 0 {
		t.Fatalf("exit status %d:\n%s", code, out.String())
	}
	for _, want := range []string{"checkpoint-2", "trainer_state.json: not a regular file (a named pipe)",
		"resumed from " + filepath.Join(runDir, "checkpoint-1"), "trained 3 steps"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
