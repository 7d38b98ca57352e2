package main

import (
	"math"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/reward"
)

// TestBuiltinRewards scores hand-picked completions with each built-in.
func TestBuiltinRewards(t *testing.T) {
	two := 2.0
	tests := []struct {
		spec               rewardSpec
		completion, answer string
		want               float64
	}{
		{rewardSpec{Type: "exact"}, " 42\n", "42", 1},
		{rewardSpec{Type: "exact"}, "42.", "42", 0},
		{rewardSpec{Type: "normalized"}, "Paris!", "paris", 1},
		{rewardSpec{Type: "numeric"}, "so it is 1,450", "1450", 1},
		{rewardSpec{Type: "numeric", Tolerance: 0.1}, "x = 3.05", "3", 1},
		{rewardSpec{Type: "numeric", Tag: "answer"}, "7 <answer>12</answer>", "12", 1},
		{rewardSpec{Type: "contains"}, "the answer is blue", "blue", 1},
		{rewardSpec{Type: "regex", Pattern: `^\d+$`}, "123", "", 1},
		{rewardSpec{Type: "regex", Pattern: `^\d+$`}, "12a", "", 0},
		{rewardSpec{Type: "json_valid"}, ` {"a": [1, 2]} `, "", 1},
		{rewardSpec{Type: "json_valid"}, `{"a": }`, "", 0},
		{rewardSpec{Type: "max_length", Limit: 10}, "abcde", "", 0.5},
		{rewardSpec{Type: "max_length", Limit: 10, Weight: &two}, "abcdefghijklmn", "", 0},
		{rewardSpec{Type: "length_penalty", Limit: 3, PerRune: 0.5}, "abcde", "", -1},
	}
	for _, tc := range tests {
		rs, err := buildRewards([]rewardSpec{tc.spec})
		if err != nil {
			t.Fatal(err)
		}
		got := rs[0].Scorer.Score(sampleOf(tc.completion, tc.answer))
		if math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s %+v on %q: %g, want %g", tc.spec.Type, tc.spec, tc.completion, got, tc.want)
		}
	}
	rs, err := buildRewards([]rewardSpec{{Type: "gsm8k", Weight: &two}, {Type: "exact", Name: "mine"}})
	if err != nil || len(rs) != 6 || rs[5].Name != "mine" || rs[0].Weight == 0 {
		t.Errorf("gsm8k set + exact: %d rewards, %v", len(rs), err)
	}
	if _, err := buildRewards([]rewardSpec{{Type: "regex", Pattern: "("}}); err == nil || !strings.Contains(err.Error(), "rewards[0] (regex)") {
		t.Errorf("bad regex: %v", err)
	}
}

// TRL's built-in rewards by their config names, on TRL's test values.
func TestTRLRewards(t *testing.T) {
	half := -0.5
	for _, tc := range []struct {
		spec       rewardSpec
		completion string
		tokens     int
		want       float64
	}{
		{rewardSpec{Type: "think_format"}, "<think>\nreasoning\n</think>\nanswer", 0, 1},
		{rewardSpec{Type: "think_format"}, "<think>no closing tag", 0, 0},
		{rewardSpec{Type: "soft_overlong_punishment", MaxCompletionLen: 100, SoftPunishCache: 20}, "", 90, -0.5},
		{rewardSpec{Type: "soft_overlong_punishment", MaxCompletionLen: 100, SoftPunishCache: 20}, "", 50, 0},
		{rewardSpec{Type: "repetition_penalty", NgramSize: 2}, "", 5, -0.75},
		{rewardSpec{Type: "repetition_penalty", NgramSize: 2, MaxPenalty: &half}, "", 5, -0.375},
		{rewardSpec{Type: "repetition_penalty"}, "", 3, 0}, // one trigram
	} {
		rs, err := buildRewards([]rewardSpec{tc.spec})
		if err != nil {
			t.Fatal(err)
		}
		s := sampleOf(tc.completion, "")
		for range tc.tokens {
			s.CompletionIDs = append(s.CompletionIDs, 5)
		}
		if got := rs[0].Scorer.Score(s); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v: %v, want %v", tc.spec, got, tc.want)
		}
	}
	for _, bad := range []rewardSpec{
		{Type: "soft_overlong_punishment"},
		{Type: "soft_overlong_punishment", MaxCompletionLen: 10, SoftPunishCache: 20},
		{Type: "repetition_penalty", MaxPenalty: new(float64(1))},
		{Type: "repetition_penalty", Tag: "answer"},
	} {
		if _, err := buildRewards([]rewardSpec{bad}); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func sampleOf(completion, answer string) reward.Sample {
	return reward.Sample{Completion: completion, Answer: answer}
}
