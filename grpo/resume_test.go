package grpo_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/reward"
)

// resumeConfig exercises everything a checkpoint must carry: AdamW state,
// a linear schedule with warmup, gradient accumulation, rollouts shared by
// NumIterations steps (the checkpoint falls between them) and the KL term.
func resumeConfig(t *testing.T) grpo.Config {
	cfg := smallConfig(t)
	cfg.MaxSteps = 6
	cfg.WarmupSteps = 2
	cfg.LRSchedulerType = grpo.ScheduleLinear
	cfg.GradientAccumulationSteps = 2
	cfg.BatchSize = 4
	cfg.NumIterations = 2
	cfg.Beta = 0.04
	cfg.EpsilonHigh = 0.28
	cfg.WeightDecay = 0.01
	cfg.SaveSteps = 0
	return cfg
}

func run(t *testing.T, cfg grpo.Config, resume bool, cancelAt int) ([]float32, []grpo.Metrics, error) {
	t.Helper()
	table, _, ms, err := runRef(t, cfg, resume, cancelAt)
	return table, ms, err
}

// runRef is run that also returns the final reference table.
func runRef(t *testing.T, cfg grpo.Config, resume bool, cancelAt int) (table, ref []float32, ms []grpo.Metrics, err error) {
	t.Helper()
	p := newPolicy(t)
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	if resume {
		path, err := grpo.LatestCheckpoint(cfg.OutputDir)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Resume(path); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr.OnStep = func(m grpo.Metrics) {
		ms = append(ms, m)
		if int(m["step"]) == cancelAt {
			cancel()
		}
	}
	err = tr.Train(ctx, sayDataset())
	return p.Table(), p.Reference(), ms, err
}

// TestResumeBitExact kills a run after step 3 (context cancellation saves a
// checkpoint), resumes it in a fresh trainer and policy, and checks that
// steps 4–6 and the final weights equal those of an uninterrupted run bit
// for bit. With sync_ref_model the reference moves at steps 2, 4 and 6:
// the checkpoint carries it past the first sync and the resumed run syncs
// again.
func TestResumeBitExact(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync_ref_model=%v", sync), func(t *testing.T) {
			cfg := resumeConfig(t)
			cfg.SyncRefModel, cfg.RefModelSyncSteps = sync, 2
			want, wantRef, wantMs, err := runRef(t, cfg, false, -1)
			if err != nil {
				t.Fatal(err)
			}

			cfg.OutputDir = t.TempDir()
			_, _, _, err = runRef(t, cfg, false, 3)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled run returned %v, want context.Canceled", err)
			}
			if path, err := grpo.LatestCheckpoint(cfg.OutputDir); err != nil || filepath.Base(path) != "checkpoint-3" {
				t.Fatalf("latest checkpoint %q, %v; want checkpoint-3", path, err)
			}
			got, gotRef, gotMs, err := runRef(t, cfg, true, -1)
			if err != nil {
				t.Fatal(err)
			}
			if len(gotMs) != 3 {
				t.Fatalf("resumed run took %d steps, want 3", len(gotMs))
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("weight %d = %v after resume, %v uninterrupted", i, got[i], want[i])
				}
			}
			moved, initial := false, newPolicy(t).Reference()
			for i := range wantRef {
				if math.Float32bits(gotRef[i]) != math.Float32bits(wantRef[i]) {
					t.Fatalf("reference weight %d = %v after resume, %v uninterrupted", i, gotRef[i], wantRef[i])
				}
				moved = moved || wantRef[i] != initial[i]
			}
			if moved != sync {
				t.Errorf("sync_ref_model %v, but the reference moved: %v", sync, moved)
			}
			for i, m := range gotMs {
				w := wantMs[3+i]
				for _, k := range []string{"step", "loss", "reward", "grad_norm", "kl", "learning_rate", "num_tokens", "clip_ratio/region_mean"} {
					if m[k] != w[k] {
						t.Errorf("step %v: %s = %v resumed, %v uninterrupted", w["step"], k, m[k], w[k])
					}
				}
			}
			ms, err := grpo.ReadMetrics(filepath.Join(cfg.OutputDir, checkpoint.MetricsFile))
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != 6 {
				t.Errorf("metrics.jsonl has %d lines after resume, want 6", len(ms))
			}
		})
	}
}

func TestResumeConfigMismatch(t *testing.T) {
	cfg := resumeConfig(t)
	cfg.MaxSteps = 1
	cfg.NumIterations = 1
	if _, _, err := run(t, cfg, false, -1); err != nil {
		t.Fatal(err)
	}
	cfg.Beta = 0.5
	cfg.Seed = 7
	p := newPolicy(t)
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	path, err := grpo.LatestCheckpoint(cfg.OutputDir)
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Resume(path)
	if err == nil || !strings.Contains(err.Error(), "differs in beta, seed") {
		t.Errorf("Resume error = %v", err)
	}
}

// TestRewardPanicsCounted: a reward that panics on some completions scores
// them 0, the failures are counted in the metrics, and training goes on.
func TestRewardPanicsCounted(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps = 5
	p := newPolicy(t)
	boom := reward.Func(func(_, c, _ string) float64 {
		if strings.Contains(c, "dog") {
			panic("reward bug")
		}
		return 1
	})
	nan := reward.Func(func(_, c, _ string) float64 { return math.NaN() })
	tr, err := grpo.NewTrainer(p, cfg,
		reward.Named{Name: "exact", Weight: 1, Scorer: exact},
		reward.Named{Name: "boom", Weight: 1, Scorer: boom},
		reward.Named{Name: "nan", Weight: 1, Scorer: nan})
	if err != nil {
		t.Fatal(err)
	}
	var panics, nans float64
	steps := 0
	tr.OnStep = func(m grpo.Metrics) {
		steps++
		panics += m["rewards/boom/failures"]
		nans += m["rewards/nan/failures"]
		if math.IsNaN(m["loss"]) {
			t.Errorf("step %v: loss is NaN", m["step"])
		}
	}
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	if steps != 5 || panics == 0 || nans != float64(5*cfg.BatchSize) {
		t.Errorf("steps %d, boom failures %v, nan failures %v; want 5, > 0, %d", steps, panics, nans, 5*cfg.BatchSize)
	}
}

// TestCancelBeforeStart: an already-cancelled context stops at once, after
// writing a checkpoint, with the context's cause.
func TestCancelBeforeStart(t *testing.T) {
	cfg := smallConfig(t)
	p := newPolicy(t)
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("operator stop")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	if err := tr.Train(ctx, sayDataset()); !errors.Is(err, cause) {
		t.Errorf("Train = %v, want %v", err, cause)
	}
	if p.Calls != 0 || tr.Step() != 0 {
		t.Errorf("generated %d times, %d steps; want none", p.Calls, tr.Step())
	}
	if path, err := grpo.LatestCheckpoint(cfg.OutputDir); err != nil || filepath.Base(path) != "checkpoint-0" {
		t.Errorf("checkpoint %q, %v", path, err)
	}
}

// TestSaveTotalLimit: with SaveTotalLimit 2 only the two newest of the
// checkpoints written every step remain, and LatestCheckpoint finds the last.
func TestSaveTotalLimit(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.SaveSteps, cfg.SaveTotalLimit = 4, 1, 2
	if _, _, err := run(t, cfg, false, -1); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(cfg.OutputDir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "checkpoint-") {
			got = append(got, e.Name())
		}
	}
	if want := []string{"checkpoint-3", "checkpoint-4"}; !slices.Equal(got, want) {
		t.Errorf("checkpoints %v, want %v", got, want)
	}
	if path, err := grpo.LatestCheckpoint(cfg.OutputDir); err != nil || filepath.Base(path) != "checkpoint-4" {
		t.Errorf("LatestCheckpoint = %q, %v", path, err)
	}
}
