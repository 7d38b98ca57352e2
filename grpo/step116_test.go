package grpo

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
)

// trlStep is testdata/trl-1.16/step.json: one optimizer step of TRL
// 1.16's GRPOTrainer.train() (internal/trlref/step.py).
type trlStep struct {
	Config struct {
		LearningRate float64 `json:"learning_rate"`
		Beta         float64 `json:"beta"`
		WeightDecay  float64 `json:"weight_decay"`
		MaxGradNorm  float64 `json:"max_grad_norm"`
		BatchSize    int     `json:"per_device_train_batch_size"`
		GradAccum    int     `json:"gradient_accumulation_steps"`
		EntropyCoef  float64 `json:"entropy_coef"`
	} `json:"config"`
	Rewards  []float64           `json:"rewards"`
	Loss     float64             `json:"loss"`
	GradNorm float64             `json:"grad_norm"`
	Logged   map[string]*float64 `json:"logged"`
	Weights  []string            `json:"weights"`
}

// Tolerances of the end-to-end step, float32 on both sides. The weights
// move by about the learning rate (1e-3) per AdamW step; a 1e-6 error is
// 0.1% of one step's update. The first AdamW step moves a weight by
// lr·g/(|g|+ε), whose derivative in g is lr·ε/(|g|+ε)²: where |g| is near
// ε = 1e-8 a float32 rounding error in the gradient shows in the update.
// Each weight may therefore also differ by lr·ε·gradErr/(|g|+ε)² (at most
// 2·lr), gradErr being the gradients' float32 error (1e-7, 1e-6 of the
// largest gradient).
const gradErr = 1e-7

var (
	tolStepLoss     = tolerance{1e-6, 1e-5}
	tolStepGradNorm = tolerance{0, 1e-5}
	tolStepWeight   = tolerance{1e-6, 0}
)

// stepOwnMetrics are the keys grpokit writes to metrics.jsonl that TRL
// does not log; docs/trl.md lists them.
var stepOwnMetrics = map[string]bool{
	"step": true, "rollouts": true, "frac_group_zero_std": true, "generate_time": true, "train_time": true,
	"timing/generate": true, "timing/reward": true, "timing/logprobs": true, "tokens_per_second": true,
	"nonfinite": true, "rewards/func0/failures": true, "rewards/func0/stray": true,
}

func loadTRLStep(t *testing.T, name string) (trlStep, map[string]stTensor) {
	t.Helper()
	dir := filepath.Join("testdata", "trl-1.16")
	data, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var s trlStep
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	ts, err := readSafetensorsF32(filepath.Join(dir, name+".safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return s, ts
}

// TestStepEndToEndTRL116 runs one optimizer step of grpokit's trainer on
// the step TRL 1.16's GRPOTrainer.train() took: llama-tiny in float32
// (fully fine-tuned, training its golden LoRA adapter, and that again with
// two accumulated micro-batches of 3 rows and an entropy bonus), the same fixed
// completions (2 prompts × 3) and rewards, beta 0.04, learning rate 1e-3,
// weight decay 0.01, AdamW, gradient clipping at 1 (the full model's
// gradient norm is 11), TRL's other defaults (dapo, bias-corrected KL).
// The loss, the gradient norm and every trained weight after the step
// agree with TRL's within the tolerances above, and the metric names are
// TRL's.
func TestStepEndToEndTRL116(t *testing.T) {
	for _, run := range []string{"step", "step-lora", "step-lora-ga2"} {
		t.Run(run, func(t *testing.T) { stepEndToEnd(t, run) })
	}
}

func stepEndToEnd(t *testing.T, run string) {
	s, ts := loadTRLStep(t, run)
	g, _ := loadTRL116(t)
	var pol *LMPolicy
	weight := map[string]func() ([]float32, error){}
	if strings.HasPrefix(run, "step-lora") {
		pol = goldenLoRAPolicy(t, nil)
		vars := pol.TrainableVariables()
		for i, name := range loraNames(t, vars) {
			v := vars[i]
			weight[name] = func() ([]float32, error) {
				x, err := v.Value()
				if err != nil {
					return nil, err
				}
				return tensors.MustCopyFlatData[float32](x), nil
			}
		}
	} else {
		m, err := model.Load(filepath.Join(sharedDir(t), "golden", "llama-tiny"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if pol, err = NewLMPolicy(m, nil, nil, nil); err != nil {
			t.Fatal(err)
		}
		for _, name := range s.Weights {
			weight[name] = func() ([]float32, error) {
				data, _, err := m.Weight(name)
				return data, err
			}
		}
	}
	cfg := DefaultConfig()
	in := g.Inputs
	cfg.NumGenerations, cfg.BatchSize, cfg.MaxCompletionLength, cfg.MaxPromptLength = in.NumGenerations, s.Config.BatchSize, in.MaxCompletionLength, 8
	cfg.GradientAccumulationSteps, cfg.EntropyCoef = s.Config.GradAccum, s.Config.EntropyCoef
	cfg.Beta, cfg.LearningRate, cfg.WeightDecay, cfg.MaxGradNorm = s.Config.Beta, s.Config.LearningRate, s.Config.WeightDecay, s.Config.MaxGradNorm
	cfg.MaxSteps, cfg.GradientCheckpointing = 1, false
	tr, err := NewTrainer(pol, cfg, reward.Named{Name: "func0", Weight: 1, Scorer: reward.Func(func(_, _, _ string) float64 { return 0 })})
	if err != nil {
		t.Fatal(err)
	}
	rows := maskedRows(in.PromptIDs, in.PromptMask, in.CompletionIDs, in.CompletionMask)
	for i, r := range rows {
		r.Rewards, r.Reward = scores{s.Rewards[i]}, s.Rewards[i]
		r.Truncated = r.IDs[len(r.IDs)-1] != 2
	}
	got, _, err := tr.trainStep(context.Background(), goldenSource{rows}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var w worst
	if !w.check(got["loss"], s.Loss, tolStepLoss) {
		t.Errorf("loss %.9g, TRL %.9g", got["loss"], s.Loss)
	}
	t.Logf("loss %.9g, TRL %.9g: |diff| %.2g", got["loss"], s.Loss, math.Abs(got["loss"]-s.Loss))
	w = worst{}
	if !w.check(got["grad_norm"], s.GradNorm, tolStepGradNorm) {
		t.Errorf("grad_norm %.9g, TRL %.9g", got["grad_norm"], s.GradNorm)
	}
	t.Logf("grad_norm %.9g, TRL %.9g: relative diff %.2g", got["grad_norm"], s.GradNorm, math.Abs(got["grad_norm"]-s.GradNorm)/s.GradNorm)

	var ww worst
	tiny, sens := 0, 0.0
	if len(weight) != len(s.Weights) {
		t.Fatalf("%d trained weights, TRL %d", len(weight), len(s.Weights))
	}
	for _, name := range s.Weights {
		get, ok := weight[name]
		if !ok {
			t.Fatalf("TRL trained %s; grpokit does not", name)
		}
		data, err := get()
		if err != nil {
			t.Fatal(err)
		}
		want, grad := ts[name], ts["grad."+name]
		bad := 0
		for i := range want.Data {
			d := math.Abs(float64(data[i] - want.Data[i]))
			gi := math.Abs(float64(grad.Data[i])) + 1e-8
			adam := min(2, 1e-8*gradErr/(gi*gi)) * s.Config.LearningRate
			if adam > tolStepWeight.atol { // the update is sensitive to the gradient's rounding
				tiny++
				sens = max(sens, d)
				if d > tolStepWeight.atol+adam {
					t.Errorf("%s[%d] = %.9g, TRL %.9g (gradient %.2g): beyond AdamW's sensitivity %.2g", name, i, data[i], want.Data[i], grad.Data[i], adam)
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
	t.Logf("weights: largest |diff| %.2g (%.0f%% of the tolerance); %d weights with |gradient| near ε, where AdamW's step is sensitive to its rounding: largest |diff| %.2g",
		ww.abs, 100*ww.frac, tiny, sens)

	// Metric names: every key TRL logged is one grpokit writes; grpokit's
	// others are its own (stepOwnMetrics).
	var missing, extra []string
	for k := range s.Logged {
		if _, ok := got[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if _, ok := s.Logged[k]; !ok && !stepOwnMetrics[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("TRL logs %s; grpokit does not", strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		t.Errorf("grpokit writes %s, which TRL does not log and stepOwnMetrics does not list", strings.Join(extra, ", "))
	}
	// Values of the logged metrics that are not timings.
	for k, want := range s.Logged {
		if want == nil || k == "loss" || k == "grad_norm" {
			continue
		}
		if v, ok := got[k]; ok && !closeTo(v, *want, 1e-5, 1e-4) {
			t.Errorf("metric %s = %.8g, TRL %.8g", k, v, *want)
		}
	}
}
