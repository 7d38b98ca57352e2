package grpo_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
)

// heldReward is a reward that holds memory (as a reward model does).
type heldReward struct{ rows, tokens int }

func (h *heldReward) Score(reward.Sample) float64 { return 1 }
func (h *heldReward) MemoryBytes(rows, tokens int) (int64, int64) {
	h.rows, h.tokens = rows, tokens
	return 7 << 20, 3 << 20
}

// TestMemoryPlanCountsRewardModels: the trainer's memory plan lists a
// reward's own memory (MemoryHolder) for a generation batch of prompts
// of the longest prompt's length plus max_completion_length.
func TestMemoryPlanCountsRewardModels(t *testing.T) {
	shape := model.Config{
		ModelType: "llama", VocabSize: 64, HiddenSize: 16, IntermediateSize: 32,
		NumHiddenLayers: 1, NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 8, MaxPositionEmbeddings: 64,
		RMSNormEps: 1e-5, RopeTheta: 10000, TieWordEmbeddings: true, HiddenAct: "silu", BOSTokenID: 1, EOSTokenIDs: []int{2},
	}
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
	held := &heldReward{}
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "rm", Weight: 1, Scorer: held})
	if err != nil {
		t.Fatal(err)
	}
	off, err := memplan.ParseLimit("off", "limit")
	if err != nil {
		t.Fatal(err)
	}
	tr.Memory = &off
	var out strings.Builder
	tr.Progress = &out
	data := dataset.SliceDataset{{PromptIDs: []int{5, 6, 7}}, {PromptIDs: []int{8, 9, 10, 11, 12}}}
	if err := tr.Train(context.Background(), data); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "reward rm: weights") || !strings.Contains(out.String(), "reward rm: forward") {
		t.Errorf("the plan does not list the reward's memory:\n%s", out.String())
	}
	if held.rows != cfg.EffectiveGenerationBatchSize() || held.tokens != 5+3 {
		t.Errorf("planned for %d samples of %d tokens, want %d of %d", held.rows, held.tokens, cfg.EffectiveGenerationBatchSize(), 5+3)
	}
}
