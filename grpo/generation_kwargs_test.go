package grpo_test

import (
	"strings"
	"testing"

	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/reward"
)

// TRL's generation_kwargs override the sampling settings by their
// transformers names (TRL passes min_new_tokens there); other names are
// errors that list the known ones.
func TestGenerationKwargs(t *testing.T) {
	c, err := grpo.DecodeConfig([]byte(`{"top_p": 1.0, "max_completion_length": 64,
		"generation_kwargs": {"top_p": 0.9, "top_k": 20, "max_new_tokens": 7, "min_new_tokens": 2, "repetition_penalty": 1.1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.TopP != 0.9 || c.TopK != 20 || c.MaxCompletionLength != 7 || c.MinCompletionLength != 2 || c.RepetitionPenalty != 1.1 {
		t.Errorf("generation_kwargs not applied: %+v", c)
	}
	for in, want := range map[string]string{
		`{"generation_kwargs": {"num_beams": 4}}`:                           `"num_beams" has no grpokit setting (want one of max_new_tokens, min_new_tokens, min_p,`,
		`{"generation_kwargs": {"top_k": 1.5}}`:                             `"top_k": 1.5 is not a whole number`,
		`{"generation_kwargs": {"temperature": "hot"}}`:                     `"temperature": hot is not a number`,
		`{"generation_kwargs": {"min_new_tokens": 9, "max_new_tokens": 4}}`: "MinCompletionLength",
	} {
		if _, err := grpo.DecodeConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", in, err, want)
		}
	}
	// A Config made in Go gets them applied by NewTrainer.
	cfg := smallConfig(t)
	cfg.GenerationKwargs = map[string]any{"max_new_tokens": 2, "temperature": 0.7}
	tr, err := grpo.NewTrainer(newPolicy(t), cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Config(); got.MaxCompletionLength != 2 || got.Temperature != 0.7 {
		t.Errorf("NewTrainer's config: max_completion_length %d, temperature %v", got.MaxCompletionLength, got.Temperature)
	}
}
