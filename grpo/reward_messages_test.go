package grpo_test

import (
	"context"
	"slices"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/reward"
)

// Rewards see a conversational prompt's messages (a reward model renders
// them with its own chat template), in training and in Evaluate; a plain
// prompt has none.
func TestRewardsSeeMessages(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps = 2
	var data dataset.SliceDataset
	for _, w := range words[1:] {
		data = append(data,
			dataset.Example{Messages: []dataset.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "say " + w}}, Answer: w,
				Meta: map[string]string{"kind": "chat"}},
			dataset.Example{Prompt: "say " + w, Answer: w, Meta: map[string]string{"kind": "plain"}})
	}
	// 1 when the sample carries exactly its example's messages (none for a
	// plain prompt).
	seen := reward.ScorerFunc(func(s reward.Sample) float64 {
		switch s.Meta["kind"] {
		case "plain":
			if s.Messages == nil {
				return 1
			}
		case "chat":
			want := []reward.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "say " + s.Answer}}
			if slices.Equal(s.Messages, want) && s.Prompt == want[1].Content {
				return 1
			}
		}
		return 0
	})
	rewards := []reward.Named{{Name: "exact", Weight: 1, Scorer: exact}, {Name: "seen", Weight: 0, Scorer: seen}}
	p := newPolicy(t)
	for _, m := range trainOn(t, p, cfg, data, rewards...) {
		if m["rewards/seen/mean"] != 1 {
			t.Errorf("step %v: rewards saw the messages in %v of the samples", m["step"], m["rewards/seen/mean"])
		}
	}
	res, err := grpo.Evaluate(context.Background(), p, data, rewards, grpo.EvalOptions{MaxCompletionLength: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := res.Mean("seen"); !ok || got != 1 {
		t.Errorf("Evaluate: rewards saw the messages in %v of the samples", got)
	}
}
