package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/grpo"
)

// A full disk tore the last line of metrics.jsonl: resuming moves it aside
// and the file reads and plots again. Before, the torn line stayed, the
// next step's line was glued to it, and every later plot failed unsaid.
func TestResumeRepairsTornMetrics(t *testing.T) {
	dir := t.TempDir()
	cfg := toyRun(t, dir, false, 2)
	if err := run(context.Background(), []string{"train", "-quiet", "-config", cfg}, io.Discard); err != nil {
		t.Fatal(err)
	}
	metrics := filepath.Join(dir, "run", checkpoint.MetricsFile)
	f, err := os.OpenFile(metrics, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"step": 3, "lo`)
	f.Close()
	var out, log bytes.Buffer
	logOut = &log
	t.Cleanup(func() { logOut = os.Stderr })
	if err := run(context.Background(), []string{"train", "-config", cfg, "-resume", "-max-steps", "3"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	ms, err := grpo.ReadMetrics(metrics)
	if err != nil || len(ms) != 3 || ms[2]["step"] != 3 {
		t.Fatalf("metrics after the resume: %d lines, %v", len(ms), err)
	}
	// The warning is one readable line on the log (stderr), not in the progress output.
	if asides, _ := filepath.Glob(metrics + ".*.aside"); len(asides) != 1 ||
		!strings.Contains(log.String(), "grpokit: warning: grpo: metrics.jsonl: moved a torn last line aside file=") ||
		strings.Contains(out.String(), "torn") {
		t.Errorf("aside files %v; output:\n%s\nlog:\n%s", asides, out.String(), log.String())
	}
	if !strings.Contains(out.String(), "plots: [") {
		t.Errorf("no plots:\n%s", out.String())
	}
}

// A plot that cannot be written fails the command, after the run's work is
// done (it was skipped without a word).
func TestPlotFailureIsAnError(t *testing.T) {
	dir := t.TempDir()
	cfg := toyRun(t, dir, false, 1)
	if err := os.MkdirAll(filepath.Join(dir, "run", "reward.png", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := run(context.Background(), []string{"train", "-quiet", "-config", cfg, "-out", filepath.Join(dir, "run")}, &out)
	if err == nil || !strings.HasPrefix(err.Error(), "grpokit: plots: plot ") || !strings.Contains(out.String(), "trained 1 steps") {
		t.Fatalf("err %v; output:\n%s", err, out.String())
	}
}

// TestResumeWithoutCheckpoint: -resume (or resume: true) where output_dir
// holds no checkpoint is an error naming the folder and saying how to
// start fresh, as TRL's resume_from_checkpoint=True raises; it trains
// nothing and writes no initial-model. Before, it started a fresh run
// without a word and exited 0.
func TestResumeWithoutCheckpoint(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		config string // appended to the run's config
		mkdir  bool   // output_dir exists (empty)
	}{
		{"-resume, no folder", []string{"-resume"}, "", false},
		{"-resume, empty folder", []string{"-resume"}, "", true},
		{"resume: true", nil, "resume: true\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := toyRun(t, dir, false, 1)
			if err := os.WriteFile(cfg, []byte(readFile(t, cfg)+c.config), 0o644); err != nil {
				t.Fatal(err)
			}
			runDir := filepath.Join(dir, "run")
			if c.mkdir {
				if err := os.Mkdir(runDir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			err := run(context.Background(), append([]string{"train", "-quiet", "-config", cfg}, c.args...), &out)
			want := "grpokit train: resume: no checkpoint in output_dir " + runDir + " to resume from; " +
				"to start a fresh run there, drop -resume (and resume: true from the config)"
			if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, checkpoint.ErrNoCheckpoint) {
				t.Fatalf("err = %v; want %q wrapping checkpoint.ErrNoCheckpoint\n%s", err, want, out.String())
			}
			if _, err := os.Stat(filepath.Join(runDir, "initial-model")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refused resume wrote initial-model (%v)", err)
			}
		})
	}
}
