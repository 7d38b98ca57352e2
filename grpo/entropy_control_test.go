package grpo_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/grpo"
)

// TestAdaptiveEntropy checks TRL 1.10's adaptive entropy control step by
// step against its rule (trl/trainer/grpo_trainer.py): the coefficient
// moves by entropy_coef_delta within [entropy_coef_min, entropy_coef_max]
// after each step, towards the maximum when the step's entropy was at most
// entropy_target; a step's loss is its policy loss minus the coefficient
// left by the previous step times the mean token entropy (TRL's objective
// L = L_policy − coef·H), and nothing on the first step or after a step
// whose entropy was above the target.
func TestAdaptiveEntropy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target float64
	}{
		{"below target", 100}, // the toy policy's entropy is < 3 nats: the bonus engages
		{"above target", -1},  // never engages; the coefficient sinks to its minimum
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig(t)
			cfg.MaxSteps = 6
			cfg.UseAdaptiveEntropy = true
			cfg.EntropyCoef, cfg.EntropyCoefDelta = 0.01, 0.02
			cfg.EntropyCoefMin, cfg.EntropyCoefMax = 0.005, 0.05
			cfg.EntropyTarget = tc.target
			ms := trainRewards(t, cfg, exact)
			coef, last := cfg.EntropyCoef, math.Inf(1)
			for _, m := range ms {
				applied := 0.0
				if last <= cfg.EntropyTarget {
					applied = coef
				}
				h := m["entropy"]
				if h <= cfg.EntropyTarget {
					coef = min(coef+cfg.EntropyCoefDelta, cfg.EntropyCoefMax)
				} else {
					coef = max(coef-cfg.EntropyCoefDelta, cfg.EntropyCoefMin)
				}
				last = h
				if math.Abs(m["entropy_coef"]-coef) > 1e-12 {
					t.Errorf("step %v: entropy_coef %v, want %v", m["step"], m["entropy_coef"], coef)
				}
				want := m["policy_loss"] - applied*h
				if math.Abs(m["loss"]-want) > 1e-6*math.Max(1, math.Abs(want)) {
					t.Errorf("step %v: loss %v, want policy_loss %v − %v × entropy %v = %v", m["step"], m["loss"], m["policy_loss"], applied, h, want)
				}
				if applied == 0 && m["loss"] != m["policy_loss"] {
					t.Errorf("step %v: no bonus applied, yet loss %v ≠ policy_loss %v", m["step"], m["loss"], m["policy_loss"])
				}
			}
			if tc.target > 0 && coef != cfg.EntropyCoefMax || tc.target < 0 && coef != cfg.EntropyCoefMin {
				t.Errorf("final coefficient %v", coef)
			}
		})
	}
}

// TestAdaptiveEntropyResume: the controller's coefficient and last entropy
// travel in the checkpoint, so a resumed run goes on bit for bit.
func TestAdaptiveEntropyResume(t *testing.T) {
	cfg := resumeConfig(t)
	cfg.UseAdaptiveEntropy = true
	cfg.EntropyCoef, cfg.EntropyCoefDelta, cfg.EntropyTarget = 0.01, 0.01, 100
	want, wantMs, err := run(t, cfg, false, -1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OutputDir = t.TempDir()
	if _, _, err := run(t, cfg, false, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run returned %v", err)
	}
	got, gotMs, err := run(t, cfg, true, -1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("weight %d = %v after resume, %v uninterrupted", i, got[i], want[i])
		}
	}
	for i, m := range gotMs {
		w := wantMs[3+i]
		for _, k := range []string{"loss", "policy_loss", "entropy_coef", "entropy"} {
			if m[k] != w[k] {
				t.Errorf("step %v: %s = %v resumed, %v uninterrupted", w["step"], k, m[k], w[k])
			}
		}
	}
	if wantMs[3]["loss"] == wantMs[3]["policy_loss"] {
		t.Error("step 4 applied no entropy bonus: the test does not exercise the restored state")
	}
}

// A config whose adaptive bounds are inverted is refused.
func TestAdaptiveEntropyConfig(t *testing.T) {
	cfg := grpo.DefaultConfig()
	cfg.UseAdaptiveEntropy, cfg.EntropyCoefMin, cfg.EntropyCoefMax = true, 0.5, 0.1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "EntropyCoefMax") || !strings.Contains(err.Error(), "≥ EntropyCoefMin") {
		t.Errorf("entropy_coef_max < entropy_coef_min: %v", err)
	}
	cfg = grpo.DefaultConfig()
	cfg.NumGenerationsEval = -1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "NumGenerationsEval") {
		t.Errorf("num_generations_eval -1: %v", err)
	}
	c, err := grpo.DecodeConfig([]byte(`{"use_adaptive_entropy": true, "entropy_coef": 0.001, "entropy_target": 0.5}`))
	if err != nil || !c.UseAdaptiveEntropy || c.EntropyTarget != 0.5 || c.EntropyCoefMax != 1 || c.EntropyCoefDelta != 0.005 {
		t.Errorf("TRL's keys: %+v, %v", c, err)
	}
}
