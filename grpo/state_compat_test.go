package grpo

import (
	"encoding/json"
	"testing"
)

// TestParseStateOlderConfig: a checkpoint written before a setting
// existed has no key for it and reads as the default (what the older code
// did), so that it resumes under a Config with the default.
func TestParseStateOlderConfig(t *testing.T) {
	cfg := DefaultConfig()
	data, err := json.Marshal(trainerState{Format: 1, Step: 2, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	c := doc["config"].(map[string]any)
	for _, k := range []string{"use_adaptive_entropy", "entropy_coef_min", "entropy_coef_max", "entropy_coef_delta", "entropy_target"} {
		delete(c, k)
	}
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	st, err := parseState(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := configDiff(st.Config, cfg); len(diff) > 0 {
		t.Errorf("an older checkpoint's config differs from today's default in %v", diff)
	}
}
