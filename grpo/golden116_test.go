package grpo

import (
	"path/filepath"
	"testing"
)

// The TRL 1.16 goldens (testdata/trl-1.16) are what TRL 1.16.0's own
// GRPOTrainer computes — _generate_and_score_completions and _compute_loss
// on llama-tiny with its golden LoRA adapter, generation replaced by fixed
// completions — written by internal/trlref/losses.py (README there for the
// pinned versions). They hold every TRL 1.10 variant and advantage set
// plus tool-masked tokens, mask_truncated_completions, unscorable rows,
// the bias-corrected KL that 1.16 turns on by default, and token-level
// luspo.

func loadTRL116(t testing.TB) (trlGolden, map[string]stTensor) {
	t.Helper()
	return loadTRLGolden(t, filepath.Join("testdata", "trl-1.16"))
}

// TestAdvantagesGoldenTRL116 checks every advantage set TRL 1.16 computed
// (scale_rewards, multi_objective_aggregation, reward weights, unscorable
// rows) and the reward metrics it logged.
func TestAdvantagesGoldenTRL116(t *testing.T) {
	g, _ := loadTRL116(t)
	checkAdvantagesGolden(t, g)
}

// TestLossGoldenTRL116 runs every TRL 1.16 variant through the trainer's
// loss graph: per-token terms, masks, loss, logged metrics and the
// gradient of every LoRA matrix.
func TestLossGoldenTRL116(t *testing.T) {
	g, ts := loadTRL116(t)
	checkLossGolden(t, g, ts, nil)
}
