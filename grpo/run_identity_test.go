package grpo_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/reward"
)

// TestResumeForeignRun: another run's checkpoint copied into an output
// folder (same config) is refused by Resume, which names both runs and
// the way to adopt it; with Trainer.AdoptRun it resumes. Before, it was
// resumed silently, its steps mixed with the folder's run.
func TestResumeForeignRun(t *testing.T) {
	train := func(dir string, steps int) {
		t.Helper()
		cfg := smallConfig(t)
		cfg.OutputDir, cfg.MaxSteps, cfg.SaveSteps = dir, steps, 2
		tr, err := grpo.NewTrainer(newPolicy(t), cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Train(context.Background(), sayDataset()); err != nil {
			t.Fatal(err)
		}
	}
	a, b := t.TempDir(), t.TempDir()
	train(a, 4)
	train(b, 2)
	if out, err := exec.Command("cp", "-r", filepath.Join(a, "checkpoint-4"), b).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	path, err := grpo.LatestCheckpoint(b)
	if err != nil || filepath.Base(path) != "checkpoint-4" {
		t.Fatalf("latest %q, %v", path, err)
	}
	cfg := smallConfig(t)
	cfg.OutputDir, cfg.MaxSteps, cfg.SaveSteps = b, 6, 2
	tr, err := grpo.NewTrainer(newPolicy(t), cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Resume(path)
	if !errors.Is(err, grpo.ErrForeignRun) || !strings.Contains(err.Error(), "holds run ") || !strings.Contains(err.Error(), "checkpoint-2") ||
		!strings.Contains(err.Error(), "grpokit train -adopt") {
		t.Fatalf("Resume of another run's checkpoint: %v", err)
	}
	if tr.Step() != 0 {
		t.Errorf("a refused Resume changed the trainer (step %d)", tr.Step())
	}
	tr.AdoptRun = true
	if err := tr.Resume(path); err != nil || tr.Step() != 4 {
		t.Fatalf("adopted: step %d, %v", tr.Step(), err)
	}
	if _, err := os.Stat(filepath.Join(a, "checkpoint-4")); err != nil {
		t.Fatal(err)
	}
}
