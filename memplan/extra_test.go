package memplan

import (
	"strings"
	"testing"
)

// TestEstimateExtra: memory held beside the policy (a reward model's
// weights and forward pass) is listed and counted in the peak in full.
func TestEstimateExtra(t *testing.T) {
	req := Request{
		Model: planModel(100, 8, 16, 2, 2, 1, 4),
		Train: Training{BatchSize: 2, MaxPromptLength: 6, MaxCompletionLength: 4},
	}
	base, err := Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	req.Extra = []Item{{Name: "reward rm: weights", Bytes: 3 << 20, Note: "as held"}, {Name: "reward rm: forward", Bytes: 1 << 20, Note: "8 samples"}}
	plan, err := Estimate(req)
	if err != nil {
		t.Fatal(err)
	}
	if d := plan.Peak - base.Peak; d != 4<<20 {
		t.Errorf("peak grew by %d bytes, want %d", d, 4<<20)
	}
	if s := plan.String(); !strings.Contains(s, "reward rm: weights") || !strings.Contains(s, "8 samples") {
		t.Errorf("plan does not list the extra items:\n%s", s)
	}
	req.Extra = []Item{{Name: "bad", Bytes: -1}}
	if _, err := Estimate(req); err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("negative extra: %v", err)
	}
}
