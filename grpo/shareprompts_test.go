package grpo

import (
	"context"
	"math"
	"testing"
)

// TestSharePromptsTrainsAsWholeRows runs the same training with
// Config.SharePrompts on and off. Step 1 starts from the same weights and
// draws the same completions, so its loss, gradient norm and entropy must
// agree to float32 rounding, and step 2's (the same completions again) too; the shared run's micro-batches must have shared
// their prompts (groups of 4), the other's not. beta and num_iterations 2
// bring in the reference and old log-prob graphs, which share too.
func TestSharePromptsTrainsAsWholeRows(t *testing.T) {
	run := func(share bool) ([]Metrics, *Trainer) {
		cfg := refSyncConfig()
		cfg.MaxSteps, cfg.SyncRefModel, cfg.SharePrompts = 2, false, share
		cfg.OutputDir = t.TempDir()
		tr, err := NewTrainer(refSyncPolicy(t), cfg, refSyncRewards...)
		if err != nil {
			t.Fatal(err)
		}
		var ms []Metrics
		tr.OnStep = func(m Metrics) { ms = append(ms, m) }
		if err := tr.Train(context.Background(), refSyncData()); err != nil {
			t.Fatal(err)
		}
		return ms, tr
	}
	whole, trWhole := run(false)
	shared, trShared := run(true)
	for _, mb := range trWhole.buf.Micro {
		if mb.Group != 0 {
			t.Errorf("share_prompts false: a micro-batch in groups of %d", mb.Group)
		}
	}
	for _, mb := range trShared.buf.Micro {
		if mb.Group != 4 {
			t.Errorf("share_prompts true: a micro-batch in groups of %d, want 4", mb.Group)
		}
	}
	if whole[0]["reward"] != shared[0]["reward"] {
		t.Fatalf("step 1 drew other completions: reward %g vs %g", whole[0]["reward"], shared[0]["reward"])
	}
	// Step 2 reuses step 1's completions (num_iterations 2) with weights
	// that differ in their last bits: its KL is no longer 0.
	for step, tol := range []float64{1e-5, 1e-4} {
		for _, k := range []string{"loss", "grad_norm", "kl", "entropy"} {
			a, b := whole[step][k], shared[step][k]
			if math.Abs(a-b) > tol*math.Max(1e-3, math.Abs(a)) {
				t.Errorf("step %d %s: whole rows %.9g, shared prompts %.9g", step+1, k, a, b)
			}
			t.Logf("step %d %s: whole rows %.9g, shared prompts %.9g", step+1, k, a, b)
		}
	}
}
