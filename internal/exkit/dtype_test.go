package exkit

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/reward"
)

// TestDType: -dtype bf16 gives a model computing in bfloat16 that trains
// (one GRPO step with a finite loss, float32 LoRA masters); an unknown or
// unsupported dtype is an error that names it.
func TestDType(t *testing.T) {
	tiny := Tiny{Words: []string{"cat", "dog"}, Hidden: 16, Layers: 1, Heads: 2, Intermediate: 32, MaxPositions: 64}
	for _, bad := range []string{"f16", "int8x"} {
		if _, err := Load("test", &Config{DType: bad, Out: t.TempDir()}, tiny); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("DType %q: error %v, want one naming it", bad, err)
		}
	}
	c := &Config{DType: "bf16", Train: "lora", LoRARank: 2, Out: t.TempDir(), Seed: 1}
	s, err := Load("test", c, tiny)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Model.Compute(); got != dtypes.BFloat16 {
		t.Fatalf("compute dtype %s, want BFloat16", got)
	}
	p, err := s.Policy(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range p.TrainableVariables() {
		if v.Shape().DType != dtypes.Float32 {
			t.Errorf("trainable %s is %s, want float32", v.ScopeAndName(), v.Shape().DType)
		}
	}
	gc := grpo.DefaultConfig()
	gc.NumGenerations, gc.BatchSize, gc.MaxCompletionLength, gc.MaxPromptLength = 2, 2, 3, 8
	gc.MaxSteps, gc.LoggingSteps, gc.OutputDir = 1, 0, t.TempDir()
	tr, err := grpo.NewTrainer(p, gc, reward.Named{Name: "len", Weight: 1, Scorer: reward.Func(func(_, c, _ string) float64 { return float64(len(c)) })})
	if err != nil {
		t.Fatal(err)
	}
	var loss float64 = math.NaN()
	tr.OnStep = func(m grpo.Metrics) { loss = m["loss"] }
	if err := tr.Train(context.Background(), dataset.SliceDataset{{Prompt: "cat"}}); err != nil {
		t.Fatal(err)
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		t.Errorf("bf16 GRPO step loss %v, want finite", loss)
	}
}
