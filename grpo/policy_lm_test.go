package grpo

import (
	"strings"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/tokenizer"
)

// tinyLM returns a one-layer Llama config and a tiny tokenizer for it.
func tinyLM(t *testing.T) (model.Config, *tokenizer.Pretrained) {
	t.Helper()
	dir := t.TempDir()
	if err := tokenizer.WriteTinyDir(dir, []string{"say", "cat"}); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return model.Config{
		ModelType: "llama", VocabSize: tok.Tokenizer.VocabSize(), HiddenSize: 16, IntermediateSize: 32,
		NumHiddenLayers: 1, NumAttentionHeads: 2, NumKeyValueHeads: 2, HeadDim: 8, MaxPositionEmbeddings: 32,
		RMSNormEps: 1e-5, RopeTheta: 10000, TieWordEmbeddings: true, HiddenAct: "silu", BOSTokenID: -1, EOSTokenIDs: tok.EOS,
	}, tok
}

// TestReferenceCopyOnlyForBeta checks that full fine-tuning's frozen copy
// of the weights is made only when a Trainer with Beta ≠ 0 needs it.
func TestReferenceCopyOnlyForBeta(t *testing.T) {
	cfgModel, tok := tinyLM(t)
	m, err := model.New(cfgModel, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	one := reward.Named{Name: "one", Scorer: reward.Func(func(_, _, _ string) float64 { return 1 })}
	cfg := DefaultConfig()
	cfg.NumGenerations, cfg.BatchSize, cfg.MaxCompletionLength = 2, 2, 2

	p, err := NewLMPolicy(m, nil, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.ref != nil {
		t.Fatal("NewLMPolicy made a reference copy")
	}
	if _, err := NewTrainer(p, cfg, one); err != nil {
		t.Fatal(err)
	}
	if p.ref != nil {
		t.Fatal("NewTrainer with Beta 0 made a reference copy")
	}
	cfg.Beta = 0.04
	if _, err := NewTrainer(p, cfg, one); err != nil {
		t.Fatal(err)
	}
	if p.ref == nil {
		t.Fatal("NewTrainer with Beta 0.04 made no reference copy")
	}

	q, err := NewLMPolicy(m, nil, tok, &LMPolicyOptions{NoReference: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewTrainer(q, cfg, one); err == nil {
		t.Fatal("NoReference with Beta 0.04: no error")
	}
}

// TestFrozenPolicyKeepsStorage: a frozen policy without an adapter leaves
// the weights as held (bf16 here; full fine-tuning would widen them to
// float32 masters), generates, and cannot be trained.
func TestFrozenPolicyKeepsStorage(t *testing.T) {
	cfg, tok := tinyLM(t)
	gen := func(frozen bool) (model.Storage, int, []Completion) {
		m, err := model.New(cfg, 1, &model.Options{Storage: model.StorageBF16})
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewLMPolicy(m, nil, tok, &LMPolicyOptions{Frozen: frozen})
		if err != nil {
			t.Fatal(err)
		}
		comps, err := p.Generate(t.Context(), []dataset.Example{{Prompt: "say cat"}}, 2, GenerateOptions{MaxCompletionLength: 3, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if frozen {
			one := reward.Named{Name: "one", Scorer: reward.Func(func(_, _, _ string) float64 { return 1 })}
			if _, err := NewTrainer(p, DefaultConfig(), one); err == nil || !strings.Contains(err.Error(), "the policy is frozen") {
				t.Errorf("NewTrainer with a frozen policy: %v", err)
			}
		}
		return m.Storage(), len(p.TrainableVariables()), comps
	}
	st, n, frozen := gen(true)
	if st != model.StorageBF16 || n != 0 {
		t.Errorf("frozen policy: storage %s, %d trainable variables; want bf16, none", st, n)
	}
	st, n, trained := gen(false)
	if st != model.StorageF32 || n == 0 {
		t.Errorf("trainable policy: storage %s, %d trainable variables; want f32 masters", st, n)
	}
	// The same bf16 values, widened exactly: the same completions.
	for i := range frozen {
		if frozen[i].Text != trained[i].Text {
			t.Errorf("completion %d: frozen %q, float32 %q", i, frozen[i].Text, trained[i].Text)
		}
	}
}
