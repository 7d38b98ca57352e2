package grpo_test

import (
	"math"
	"testing"

	"github.com/grpokit/grpokit/reward"
)

// Rewards see the completion's tokens (TRL's completion_ids, EOS
// included): a reward that scores their count averages to TRL's
// completions/mean_length, and TRL's token-based built-ins run in training.
func TestRewardsSeeCompletionIDs(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps = 3
	count := reward.ScorerFunc(func(s reward.Sample) float64 { return float64(len(s.CompletionIDs)) })
	overlong, err := reward.SoftOverlongPunishment(cfg.MaxCompletionLength, 1)
	if err != nil {
		t.Fatal(err)
	}
	ms := trainOn(t, newPolicy(t), cfg, sayDataset(),
		reward.Named{Name: "exact", Weight: 1, Scorer: exact},
		reward.Named{Name: "tokens", Weight: 0, Scorer: count},
		reward.Named{Name: "overlong", Weight: 0, Scorer: overlong})
	for _, m := range ms {
		if got, want := m["rewards/tokens/mean"], m["completions/mean_length"]; want == 0 || math.Abs(got-want) > 1e-9 {
			t.Errorf("step %v: mean token count seen by rewards %v, completions/mean_length %v", m["step"], got, want)
		}
		if m["rewards/overlong/failures"] != 0 {
			t.Errorf("step %v: soft overlong punishment failed %v times", m["step"], m["rewards/overlong/failures"])
		}
	}
}
