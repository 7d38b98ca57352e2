package grpo

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
)

// trlWarmStep is DIR/trlstep/step.json of internal/trlref/warmstart.py
// trlstep: the first step of TRL 1.16's GRPOTrainer.train() on a
// warm-started tiny model, with the completions it sampled.
type trlWarmStep struct {
	LearningRate   float64     `json:"learning_rate"`
	EOS            int32       `json:"eos"`
	PromptIDs      [][]int32   `json:"prompt_ids"`
	PromptMask     [][]int32   `json:"prompt_mask"`
	CompletionIDs  [][]int32   `json:"completion_ids"`
	CompletionMask [][]float32 `json:"completion_mask"`
	Rewards        []float64   `json:"rewards"`
	Loss           float64     `json:"loss"`
	GradNorm       float64     `json:"grad_norm"`
	Weights        []string    `json:"weights"`
}

// TestWarmStartStepTRL116 retakes the first step of TRL's GRPO run on the
// warm-started model of internal/trlref/warmstart.py (its folder
// GRPOKIT_WARMSTART_STEP=DIR, holding warm/ and trlstep/): the same
// completions and rewards, the run's settings (beta 0, dapo, group
// scaling, constant learning rate, clipping at 1). The loss, gradient norm
// and every weight after the AdamW step agree with TRL's within the
// tolerances of TestStepEndToEndTRL116. Without the variable it skips.
func TestWarmStartStepTRL116(t *testing.T) {
	dir := os.Getenv("GRPOKIT_WARMSTART_STEP")
	if dir == "" {
		t.Skip("GRPOKIT_WARMSTART_STEP not set (a folder written by internal/trlref/warmstart.py warm and trlstep)")
	}
	data, err := os.ReadFile(filepath.Join(dir, "trlstep", "step.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s trlWarmStep
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	ts, err := readSafetensorsF32(filepath.Join(dir, "trlstep", "step.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(filepath.Join(dir, "warm"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := NewLMPolicy(m, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.NumGenerations, cfg.BatchSize, cfg.MaxCompletionLength, cfg.MaxPromptLength = 8, len(s.Rewards), len(s.CompletionIDs[0]), 64
	cfg.LearningRate, cfg.LRSchedulerType, cfg.MaxSteps, cfg.GradientCheckpointing = s.LearningRate, ScheduleConstant, 1, false
	tr, err := NewTrainer(pol, cfg, reward.Named{Name: "numeric", Weight: 1, Scorer: reward.Func(func(_, _, _ string) float64 { return 0 })})
	if err != nil {
		t.Fatal(err)
	}
	rows := maskedRows(s.PromptIDs, s.PromptMask, s.CompletionIDs, s.CompletionMask)
	for i, r := range rows {
		r.Rewards, r.Reward = scores{s.Rewards[i]}, s.Rewards[i]
		r.Truncated = r.IDs[len(r.IDs)-1] != s.EOS
	}
	got, _, err := tr.trainStep(context.Background(), goldenSource{rows}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var w worst
	if !w.check(got["loss"], s.Loss, tolStepLoss) {
		t.Errorf("loss %.9g, TRL %.9g", got["loss"], s.Loss)
	}
	if !w.check(got["grad_norm"], s.GradNorm, tolStepGradNorm) {
		t.Errorf("grad_norm %.9g, TRL %.9g", got["grad_norm"], s.GradNorm)
	}
	t.Logf("loss %.9g, TRL %.9g; grad_norm %.9g, TRL %.9g (relative diff %.2g); reward %.4g", got["loss"], s.Loss,
		got["grad_norm"], s.GradNorm, math.Abs(got["grad_norm"]-s.GradNorm)/s.GradNorm, got["reward"])
	var ww worst
	sens := 0.0
	for _, name := range s.Weights {
		data, _, err := m.Weight(name)
		if err != nil {
			t.Fatal(err)
		}
		want, grad := ts[name], ts["grad."+name]
		if len(data) != len(want.Data) {
			t.Fatalf("%s: %d values, TRL %d", name, len(data), len(want.Data))
		}
		bad := 0
		for i := range want.Data {
			d := math.Abs(float64(data[i] - want.Data[i]))
			gi := math.Abs(float64(grad.Data[i])) + 1e-8
			adam := min(2, 1e-8*gradErr/(gi*gi)) * s.LearningRate
			if adam > tolStepWeight.atol {
				sens = max(sens, d)
				if d > tolStepWeight.atol+adam {
					t.Errorf("%s[%d] = %.9g, TRL %.9g: beyond AdamW's sensitivity %.2g", name, i, data[i], want.Data[i], adam)
				}
				continue
			}
			if !ww.check(float64(data[i]), float64(want.Data[i]), tolStepWeight) {
				if bad < 3 {
					t.Errorf("%s[%d] = %.9g, TRL %.9g", name, i, data[i], want.Data[i])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d weights out of tolerance", name, bad, len(want.Data))
		}
	}
	t.Logf("weights: largest |diff| %.2g (%.0f%% of the tolerance); near-ε gradients: largest |diff| %.2g", ww.abs, 100*ww.frac, sens)
}
