package grpo_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
)

// TestTrainerPrintsMemoryPlan: an LMPolicy's run prints the memory plan
// before step 0, stops with an *OutOfMemoryError naming the settings to
// lower when the plan exceeds Trainer.Memory, and trains anyway with a
// budget that is off. GRPOKIT_MEMORY_LIMIT is the command's: the trainer
// never reads it.
func TestTrainerPrintsMemoryPlan(t *testing.T) {
	shape := model.Config{
		ModelType: "llama", VocabSize: 64, HiddenSize: 16, IntermediateSize: 32,
		NumHiddenLayers: 1, NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 8, MaxPositionEmbeddings: 64,
		RMSNormEps: 1e-5, RopeTheta: 10000, TieWordEmbeddings: true, HiddenAct: "silu", BOSTokenID: 1, EOSTokenIDs: []int{2},
	}
	data := dataset.SliceDataset{{PromptIDs: []int{5, 6, 7}}, {PromptIDs: []int{8, 9, 10, 11, 12}}}
	t.Setenv(memplan.LimitEnv, "1MB")
	run := func(limit string) (string, error) {
		m, err := model.New(shape, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := grpo.NewLMPolicy(m, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := grpo.DefaultConfig()
		cfg.NumGenerations, cfg.BatchSize, cfg.MaxSteps = 2, 4, 1
		cfg.MaxPromptLength, cfg.MaxCompletionLength = 8, 3
		cfg.LoggingSteps = 0
		cfg.OutputDir = filepath.Join(t.TempDir(), "out")
		tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "one", Weight: 1, Scorer: reward.Func(func(_, _, _ string) float64 { return 1 })})
		if err != nil {
			t.Fatal(err)
		}
		if limit != "" {
			budget, err := memplan.ParseLimit(limit, "limit")
			if err != nil {
				t.Fatal(err)
			}
			tr.Memory = &budget
		}
		var out strings.Builder
		tr.Progress = &out
		err = tr.Train(context.Background(), data)
		return out.String(), err
	}

	out, err := run("1MB")
	var oom *memplan.OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("1MB limit: error %v, want *OutOfMemoryError", err)
	}
	if oom.Available != 1e6 || !strings.Contains(err.Error(), "per_device_train_batch_size (4)") {
		t.Errorf("error: %v", err)
	}
	// The longest prompt of the data (5 tokens) sizes the plan.
	if !strings.Contains(out, "memory plan: llama") || !strings.Contains(out, "4 rows × (5 prompt + 3 completion) tokens") ||
		!strings.Contains(out, "peak (estimate)") {
		t.Errorf("plan not printed:\n%s", out)
	}
	if out, err := run("off"); err != nil || !strings.Contains(out, "memory plan:") {
		t.Errorf("off: %v\n%s", err, out)
	}
	if out, err := run(""); err != nil || !strings.Contains(out, "memory plan:") {
		t.Errorf("no budget given, %s=1MB in the environment: %v\n%s", memplan.LimitEnv, err, out)
	}
}

// TestLMPolicyMemoryRequest: the bytes a loaded model's frozen weights
// take (summed over its variables) are what model.Config.HeldBytes counts
// from the shapes, for each storage.
func TestLMPolicyMemoryRequest(t *testing.T) {
	shape := model.Config{
		ModelType: "llama", VocabSize: 256, HiddenSize: 64, IntermediateSize: 128,
		NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16, MaxPositionEmbeddings: 64,
		RMSNormEps: 1e-5, RopeTheta: 10000, TieWordEmbeddings: true, HiddenAct: "silu", BOSTokenID: 1, EOSTokenIDs: []int{2},
	}
	for _, st := range []model.Storage{model.StorageBF16, model.StorageNF4, model.StorageInt8} {
		m, err := model.New(shape, 1, &model.Options{Storage: st})
		if err != nil {
			t.Fatal(err)
		}
		a, err := lora.Attach(m, lora.Config{R: 4, Alpha: 8, Seed: 1, TargetModules: []string{"q_proj", "down_proj"}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := grpo.NewLMPolicy(m, a, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := p.MemoryRequest(grpo.DefaultConfig(), 0)
		if want := shape.HeldBytes(st, "F32", false); r.WeightBytes != want {
			t.Errorf("%s: WeightBytes %d, HeldBytes %d", st, r.WeightBytes, want)
		}
		if r.LoRARank != 4 || len(r.LoRATargets) != 2 || r.Storage != st {
			t.Errorf("%s: %+v", st, r)
		}
	}
}
