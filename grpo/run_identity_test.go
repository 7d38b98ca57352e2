package grpo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
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

// TestResumeRelabelledCheckpoint: checkpoint-4 relabelled as step 6 (its
// folder renamed, trainer_state.json's step edited, the manifest written
// anew) is refused by Resume: the optimizer's global_step says 4. Before,
// it resumed at step 6 and steps 5-6 never happened.
func TestResumeRelabelledCheckpoint(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.SaveSteps = 8, 2
	tr, err := grpo.NewTrainer(newPolicy(t), cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr.OnStep = func(m grpo.Metrics) {
		if m["step"] == 4 {
			cancel() // the run stops after step 4, saved as checkpoint-4
		}
	}
	if err := tr.Train(ctx, sayDataset()); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	src := filepath.Join(cfg.OutputDir, "checkpoint-4")
	if _, err := checkpoint.Write(cfg.OutputDir, 6, func(tmp string) error {
		if out, err := exec.Command("cp", "-r", src+"/.", tmp).CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if err := os.Remove(filepath.Join(tmp, checkpoint.ManifestFile)); err != nil {
			return err
		}
		var state map[string]any
		data, err := os.ReadFile(filepath.Join(tmp, "trainer_state.json"))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, &state); err != nil {
			return err
		}
		state["step"] = 6
		data, _ = json.Marshal(state)
		return os.WriteFile(filepath.Join(tmp, "trainer_state.json"), data, 0o644)
	}, nil); err != nil {
		t.Fatal(err)
	}
	path, err := grpo.LatestCheckpoint(cfg.OutputDir)
	if err != nil || filepath.Base(path) != "checkpoint-6" {
		st, _ := grpo.Checkpoints(cfg.OutputDir)
		t.Fatalf("latest %q, %v; %+v", path, err, st)
	}
	tr2, err := grpo.NewTrainer(newPolicy(t), cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	err = tr2.Resume(path)
	if !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), "trainer_state.json: step 6 (0 not applied), but the optimizer's global_step is 4") {
		t.Fatalf("Resume of the relabelled checkpoint: %v", err)
	}
}
