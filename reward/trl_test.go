package reward_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/reward"
)

// The cases of TRL 1.10's tests/test_rewards.py, with its expected values.

func TestThinkFormat(t *testing.T) {
	f := reward.ThinkFormat()
	for _, tc := range []struct {
		completion string
		want       float64
	}{
		{"<think>This is my reasoning.</think>This is my answer.", 1},
		{"<think>\nThis is my reasoning.\n</think>\nThis is my answer.", 1},
		{"<think>\nThis is\nmy reasoning.\n</think>\nThis is my answer.", 1},
		{"<think>\nThis is <some tag> my reasoning.</think>\nThis is my answer.", 1},
		{"<think></think>\nThis is my answer.", 1},
		{"<think>\nThis is my reasoning.\nThis is my answer.", 0},
		{"<think>This is my reasoning.\nThis is my answer.", 0},
		{"This is my reasoning. This is my answer.", 0},
		{"This is my reasoning.\nThis is my answer.", 0},
		{"This is my reasoning.</think>\nThis is my answer.", 0},
		{"This is my reasoning.</think>This is my answer.", 0},
		{"This<think>is my reasoning.</think>\nThis is my answer.", 0},
		{"<think>This is<think>my reasoning.</think></think>This is my answer.", 0},
		{"<think>This is</think>\nmy\n<think>reasoning.</think>\nThis is my answer.", 0},
	} {
		if got := f("", tc.completion, ""); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.completion, got, tc.want)
		}
	}
}

func ids(n int) []int32 { return slices.Repeat([]int32{1}, n) }

func TestSoftOverlongPunishment(t *testing.T) {
	f, err := reward.SoftOverlongPunishment(100, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n    int
		want float64
	}{{50, 0}, {80, 0}, {90, -0.5}, {100, -1}, {110, -1}} {
		if got := f.Score(reward.Sample{CompletionIDs: ids(tc.n)}); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%d tokens: %v, want %v", tc.n, got, tc.want)
		}
	}
	if got := f.Score(reward.Sample{Completion: "no tokens"}); !math.IsNaN(got) {
		t.Errorf("a sample without tokens scored %v, want NaN (a failed call)", got)
	}
	noCache, _ := reward.SoftOverlongPunishment(10, 0)
	if a, b := noCache.Score(reward.Sample{CompletionIDs: ids(10)}), noCache.Score(reward.Sample{CompletionIDs: ids(11)}); a != 0 || b != -1 {
		t.Errorf("cache 0: %v at the limit, %v past it; want 0, -1", a, b)
	}
	for _, bad := range [][2]int{{0, 0}, {10, -1}, {10, 11}} {
		if _, err := reward.SoftOverlongPunishment(bad[0], bad[1]); err == nil || !strings.Contains(err.Error(), "want 0 ≤ cache ≤ max_completion_len") {
			t.Errorf("SoftOverlongPunishment(%d, %d): %v", bad[0], bad[1], err)
		}
	}
}

func TestRepetitionPenalty(t *testing.T) {
	for _, tc := range []struct {
		n          int
		maxPenalty float64
		ids        []int32
		want       float64
	}{
		{2, -1, []int32{1, 2, 3, 4}, 0},
		{2, -1, []int32{5, 5, 5, 5, 5}, -0.75},
		{2, -1, []int32{1, 2, 1, 2, 1, 2}, -0.6},
		{3, -1, []int32{1, 2}, 0},
		{3, -1, []int32{1, 2, 3}, 0},
		{3, -1, []int32{}, 0},
		{2, -0.5, []int32{5, 5, 5, 5, 5}, -0.375},
		{2, -1, []int32{1, 2, 3, 1, 2, 3}, -0.4},
		{3, -1, []int32{1, 2, 3, 1, 2, 3}, -0.25},
		{2, -1, []int32{9}, 0},
	} {
		f, err := reward.RepetitionPenalty(tc.n, tc.maxPenalty)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Score(reward.Sample{CompletionIDs: tc.ids}); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("n=%d max %v %v: %v, want %v", tc.n, tc.maxPenalty, tc.ids, got, tc.want)
		}
	}
	if _, err := reward.RepetitionPenalty(2, 0.5); err == nil || !strings.Contains(err.Error(), "max_penalty ≤ 0") {
		t.Errorf("a positive max_penalty: %v (TRL raises ValueError)", err)
	}
}
