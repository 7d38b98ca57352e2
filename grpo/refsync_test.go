package grpo

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
)

// refSyncWords are the tiny model's words and the prompts' answers.
var refSyncWords = []string{"say", "cat", "dog", "fish", "bird"}

// refSyncPolicy returns a full fine-tuning LMPolicy of a tiny model built
// from scratch (seed 1), the same weights on every call.
func refSyncPolicy(t *testing.T) *LMPolicy {
	t.Helper()
	m, tok, err := model.NewTiny(t.TempDir(), refSyncWords, model.TinyConfig{Hidden: 32, Layers: 1}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewLMPolicy(m, nil, tok, &LMPolicyOptions{NoSpecialTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// refSyncConfig syncs the reference every 2 steps of a 5-step run whose
// rollouts serve 2 steps each (checkpoint 3 falls inside a generation
// batch, after the first sync).
func refSyncConfig() Config {
	cfg := DefaultConfig()
	cfg.NumGenerations, cfg.BatchSize, cfg.MaxCompletionLength = 4, 8, 3
	cfg.MaxSteps, cfg.NumIterations = 5, 2
	cfg.LearningRate, cfg.WarmupSteps = 1e-2, 0
	cfg.Beta = 0.04
	cfg.SyncRefModel, cfg.RefModelSyncSteps, cfg.RefModelMixupAlpha = true, 2, 0.6
	cfg.LoggingSteps, cfg.SaveSteps, cfg.Seed = 0, 0, 1
	return cfg
}

// refSyncRewards scores a completion by its length, so groups differ and
// the weights move from the first step.
var refSyncRewards = []reward.Named{{Name: "length", Weight: 1, Scorer: reward.Func(func(_, completion, _ string) float64 {
	return float64(len(completion))
})}}

func refSyncData() dataset.Dataset {
	var data dataset.SliceDataset
	for _, w := range refSyncWords[1:] {
		data = append(data, dataset.Example{Prompt: "say " + w, Answer: w})
	}
	return data
}

// weights returns every weight of m by name.
func weights(t *testing.T, m *model.Model) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	for _, w := range m.Config().Weights() {
		data, _, err := m.Weight(w.Name)
		if err != nil {
			t.Fatal(err)
		}
		out[w.Name] = data
	}
	return out
}

// runRefSync trains a fresh policy with cfg (resuming from the latest
// checkpoint of cfg.OutputDir when resume is set, cancelling after step
// cancelAt) and returns the policy and the steps' metrics.
func runRefSync(t *testing.T, cfg Config, resume bool, cancelAt int) (*LMPolicy, []Metrics, error) {
	t.Helper()
	p := refSyncPolicy(t)
	tr, err := NewTrainer(p, cfg, refSyncRewards...)
	if err != nil {
		t.Fatal(err)
	}
	tr.Progress = io.Discard
	if resume {
		path, err := LatestCheckpoint(cfg.OutputDir)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Resume(path); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ms []Metrics
	tr.OnStep = func(m Metrics) {
		ms = append(ms, m)
		if int(m["step"]) == cancelAt {
			cancel()
		}
	}
	return p, ms, tr.Train(ctx, refSyncData())
}

// checkpointWeights reads a checkpoint's saved variables (file name) by
// "scope/name".
func checkpointWeights(t *testing.T, dir, name string) map[string][]float32 {
	t.Helper()
	vars, err := readVariablesFile(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for _, v := range vars {
		if v.value.DType() == dtypes.Float32 {
			out[v.scope+"/"+v.name] = tensors.MustCopyFlatData[float32](v.value)
		}
	}
	return out
}

// TestRefSyncMixesWeights checks TR-DPO's reference update against the
// formula in float64 on the weights read back from the checkpoints of
// every step: at steps 2 and 4 (multiples of ref_model_sync_steps) the
// reference becomes α·policy + (1 − α)·reference of the step before; at
// the other steps it does not change; before the first sync it is the
// initial model.
func TestRefSyncMixesWeights(t *testing.T) {
	cfg := refSyncConfig()
	cfg.OutputDir, cfg.SaveSteps = t.TempDir(), 1
	initial := weights(t, refSyncPolicy(t).model)
	p, _, err := runRefSync(t, cfg, false, -1)
	if err != nil {
		t.Fatal(err)
	}
	ckpt := func(step int) string { return filepath.Join(cfg.OutputDir, checkpoint.Name(step)) }

	// The reference's variables and the policy's weights among the
	// checkpoint's variables have the same scope and name.
	ref1 := checkpointWeights(t, ckpt(1), referenceFile)
	if len(ref1) != len(initial) {
		t.Fatalf("reference.gob holds %d weights, the model %d", len(ref1), len(initial))
	}
	for name, want := range initial {
		scope, v, _ := model.ScopeOf(name)
		got := ref1[scope+"/"+v]
		if len(got) != len(want) {
			t.Fatalf("%s: %d values in checkpoint-1's reference, want %d", name, len(got), len(want))
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s[%d]: checkpoint-1's reference %v, initial weight %v (no sync before step 2)", name, i, got[i], want[i])
			}
		}
	}

	alpha := cfg.RefModelMixupAlpha
	prev := ref1
	for step := 2; step <= cfg.MaxSteps; step++ {
		ref := checkpointWeights(t, ckpt(step), referenceFile)
		pol := checkpointWeights(t, ckpt(step), variablesFile)
		synced := step%cfg.RefModelSyncSteps == 0
		var maxErr, moved float64
		for key, r := range ref {
			before, after, policy := prev[key], r, pol[key]
			if len(policy) != len(after) || len(before) != len(after) {
				t.Fatalf("step %d: %s: %d policy, %d earlier and %d reference values", step, key, len(policy), len(before), len(after))
			}
			for i := range after {
				if !synced {
					if math.Float32bits(after[i]) != math.Float32bits(before[i]) {
						t.Fatalf("step %d (no sync due): %s[%d] changed from %v to %v", step, key, i, before[i], after[i])
					}
					continue
				}
				want := alpha*float64(policy[i]) + (1-alpha)*float64(before[i])
				// float32 arithmetic: r·(1−α) and α·p each rounded, then
				// their sum: within 2 ulps of the terms' magnitude.
				tol := 4 * 0x1p-24 * (alpha*math.Abs(float64(policy[i])) + (1-alpha)*math.Abs(float64(before[i])))
				d := math.Abs(float64(after[i]) - want)
				if d > tol {
					t.Fatalf("step %d: %s[%d] = %v, want α·%v + (1−α)·%v = %v (difference %g)", step, key, i, after[i], policy[i], before[i], want, d)
				}
				maxErr = max(maxErr, d)
				moved = max(moved, math.Abs(float64(policy[i])-float64(before[i])))
			}
		}
		if synced && moved < 1e-4 {
			t.Fatalf("step %d: the policy is within %g of the reference: the test cannot tell a sync from none", step, moved)
		}
		if synced {
			t.Logf("step %d: sync within %.3g of the float64 formula; the policy was up to %.3g from the reference", step, maxErr, moved)
		}
		prev = ref
	}
	// The live reference is the last checkpoint's.
	final := weights(t, p.ref)
	for name, got := range final {
		scope, v, _ := model.ScopeOf(name)
		want := prev[scope+"/"+v]
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s[%d]: live reference %v, last checkpoint's %v", name, i, got[i], want[i])
			}
		}
	}
}

// TestRefSyncResumeBitExact stops a run after step 3 (past the sync of
// step 2, inside a generation batch), resumes it in a fresh policy and
// trainer, and checks that steps 4–5 (with the sync of step 4), the final
// policy and the final reference equal the uninterrupted run's bit for
// bit.
func TestRefSyncResumeBitExact(t *testing.T) {
	cfg := refSyncConfig()
	want, wantMs, err := runRefSync(t, cfg, false, -1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OutputDir = t.TempDir()
	if _, _, err := runRefSync(t, cfg, false, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run returned %v, want context.Canceled", err)
	}
	got, gotMs, err := runRefSync(t, cfg, true, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(gotMs) != 2 {
		t.Fatalf("resumed run took %d steps, want 2", len(gotMs))
	}
	for i, m := range gotMs {
		w := wantMs[3+i]
		for _, k := range []string{"step", "loss", "kl", "grad_norm", "reward", "entropy"} {
			if m[k] != w[k] {
				t.Errorf("step %v: %s = %v resumed, %v uninterrupted", w["step"], k, m[k], w[k])
			}
		}
	}
	for _, c := range []struct {
		what      string
		got, want *model.Model
	}{{"policy", got.model, want.model}, {"reference", got.ref, want.ref}} {
		g, w := weights(t, c.got), weights(t, c.want)
		for name := range w {
			for i := range w[name] {
				if math.Float32bits(g[name][i]) != math.Float32bits(w[name][i]) {
					t.Fatalf("%s %s[%d] = %v resumed, %v uninterrupted", c.what, name, i, g[name][i], w[name][i])
				}
			}
		}
	}
}

// TestRefSyncErrors: the settings TRL refuses (beta 0, a PEFT model) and
// values out of range are errors that say why; without sync_ref_model the
// other two keys are not checked, as in TRL.
func TestRefSyncErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string // "" for none
	}{
		{"beta 0", func(c *Config) { c.Beta = 0 }, "SyncRefModel = true: needs Beta ≠ 0"},
		{"alpha", func(c *Config) { c.RefModelMixupAlpha = 1.5 }, "RefModelMixupAlpha = 1.5: must be in [0, 1]"},
		{"alpha NaN", func(c *Config) { c.RefModelMixupAlpha = math.NaN() }, "RefModelMixupAlpha = NaN"},
		{"steps", func(c *Config) { c.RefModelSyncSteps = 0 }, "RefModelSyncSteps = 0: must be at least 1"},
		{"off", func(c *Config) { c.SyncRefModel, c.Beta, c.RefModelSyncSteps, c.RefModelMixupAlpha = false, 0, 0, 2 }, ""},
		{"alpha 1", func(c *Config) { c.RefModelMixupAlpha = 1 }, ""},
	} {
		cfg := refSyncConfig()
		tc.set(&cfg)
		err := cfg.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}

	m, tok, err := model.NewTiny(t.TempDir(), refSyncWords, model.TinyConfig{Hidden: 32, Layers: 1}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := lora.Attach(m, lora.Config{R: 2, Alpha: 4})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewLMPolicy(m, a, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewTrainer(p, refSyncConfig(), refSyncRewards...)
	if err == nil || !strings.Contains(err.Error(), "sync_ref_model with a LoRA adapter") {
		t.Errorf("NewTrainer with a LoRA policy: %v, want the PEFT refusal", err)
	}
	if err := p.SyncReference(0.5); err == nil {
		t.Error("SyncReference of a LoRA policy: no error")
	}
	if err := refSyncPolicy(t).SyncReference(0.5); err == nil || !strings.Contains(err.Error(), "no reference copy") {
		t.Errorf("SyncReference before the copy exists: %v", err)
	}
}

// TestRefSyncResumeChecksReference: Resume refuses reference weights that
// do not match the reference model one for one, before changing anything.
func TestRefSyncResumeChecksReference(t *testing.T) {
	cfg := refSyncConfig()
	cfg.MaxSteps, cfg.NumIterations, cfg.OutputDir = 2, 1, t.TempDir()
	if _, _, err := runRefSync(t, cfg, false, -1); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(cfg.OutputDir, checkpoint.Name(2))
	cd, err := readCheckpoint(src)
	if err != nil {
		t.Fatal(err)
	}

	// A complete checkpoint folder (its own manifest) without the
	// reference weights is not a checkpoint of this run.
	other := t.TempDir()
	if _, err := checkpoint.Write(other, 2, func(dir string) error {
		for _, name := range []string{stateFile, variablesFile} {
			data, err := os.ReadFile(filepath.Join(src, name))
			if err != nil {
				return err
			}
			if err := checkpoint.WriteFileSync(filepath.Join(dir, name), data); err != nil {
				return err
			}
		}
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := LatestCheckpoint(other); !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), referenceFile) {
		t.Errorf("a checkpoint without %s: %v, want it corrupt, naming the file", referenceFile, err)
	}

	p := refSyncPolicy(t)
	if _, err := NewTrainer(p, cfg, refSyncRewards...); err != nil {
		t.Fatal(err)
	}
	refCtx := p.ref.Context()
	if _, err := planReference(refCtx, cd.ref); err != nil {
		t.Fatalf("the checkpoint's own reference: %v", err)
	}
	if _, err := planReference(refCtx, cd.ref[1:]); err == nil || !strings.Contains(err.Error(), "is not in the checkpoint") {
		t.Errorf("a weight missing: %v", err)
	}
	extra := append(cd.ref[:len(cd.ref):len(cd.ref)], savedVar{scope: "/model", name: "stray", value: cd.ref[0].value})
	if _, err := planReference(refCtx, extra); err == nil || !strings.Contains(err.Error(), "/model/stray is not in the reference model") {
		t.Errorf("a stray weight: %v", err)
	}
	wrong := append([]savedVar(nil), cd.ref...)
	wrong[0].value = cd.ref[1].value
	if cd.ref[0].value.Shape().Equal(cd.ref[1].value.Shape()) {
		t.Skip("first two weights have the same shape")
	}
	if _, err := planReference(refCtx, wrong); err == nil || !strings.Contains(err.Error(), "checkpoint shape") {
		t.Errorf("a weight of another shape: %v", err)
	}
}
