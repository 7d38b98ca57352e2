package poker

import (
	"context"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/reward"
)

func TestPrompt(t *testing.T) {
	h := mustHand(t, "As Kh Td 9c 2s")
	want := "Classify this five-card poker hand: As Kh Td 9c 2s\n" +
		"Each card is a rank (2-9, T=10, J, Q, K, A) followed by a suit (c=clubs, d=diamonds, h=hearts, s=spades).\n" +
		"Answer with exactly one of: high card, one pair, two pair, three of a kind, straight, flush, full house, four of a kind, straight flush."
	if got := Prompt(h); got != want {
		t.Errorf("Prompt =\n%s\nwant\n%s", got, want)
	}
}

func TestReward(t *testing.T) {
	tests := []struct {
		completion, answer string
		want               float64
	}{
		{"high card", "high card", 1},
		{"one pair", "one pair", 1},
		{"two pair", "two pair", 1.5},
		{"Three of a kind.", "three of a kind", 2},
		{"straight", "straight", 2},
		{"flush", "flush", 2},
		{"full house", "full house", 2.5},
		{"four of a kind", "four of a kind", 3},
		{"straight flush", "straight flush", 3},
		{"flush", "straight flush", 0},       // wrong
		{"royal flush", "straight flush", 0}, // not a label
		{"It is a flush", "flush", 0},        // not exactly a label
		{"flush", "not a label", 0},          // bad answer
	}
	for _, tc := range tests {
		if got := Reward("", tc.completion, tc.answer); got != tc.want {
			t.Errorf("Reward(%q, %q) = %v, want %v", tc.completion, tc.answer, got, tc.want)
		}
	}
	rs := Rewards()
	res, err := (&reward.Evaluator{Rewards: rs}).Evaluate(context.Background(),
		[]reward.Sample{{Completion: "full house", Answer: "full house"}})
	if err != nil || res.Totals[0] != 2.5 {
		t.Errorf("Rewards via Evaluator: %v, %v", res, err)
	}
}

func TestEvaluate(t *testing.T) {
	preds := []string{"flush", "flush", "pair", "one pair", "high card", "one pair"}
	truths := []Class{Flush, Flush, OnePair, OnePair, OnePair, HighCard}
	rep, err := Evaluate(preds, truths)
	if err != nil {
		t.Fatal(err)
	}
	// flush 2/2; one pair 1/3 (one invalid); high card 0/1.
	if rep.PerClass[Flush] != (ClassResult{N: 2, Correct: 2}) ||
		rep.PerClass[OnePair] != (ClassResult{N: 3, Correct: 1, Invalid: 1}) ||
		rep.PerClass[HighCard] != (ClassResult{N: 1}) {
		t.Errorf("PerClass = %+v", rep.PerClass)
	}
	// accuracy 3/6; macro (1 + 1/3 + 0)/3 = 4/9; valid 5/6.
	if rep.Accuracy != 0.5 || abs(rep.MacroAccuracy-4.0/9) > 1e-12 || abs(rep.ValidShare-5.0/6) > 1e-12 || rep.N != 6 {
		t.Errorf("report = %+v", rep)
	}
	// Right: two flushes (weight 2 each) and one pair (weight 1): 5/6.
	if abs(rep.MeanReward-5.0/6) > 1e-12 {
		t.Errorf("MeanReward = %v, want 5/6", rep.MeanReward)
	}
	// Valid predictions only: the invalid "pair" is in no cell.
	var confusion [NumClasses][NumClasses]int
	confusion[Flush][Flush] = 2
	confusion[OnePair][OnePair] = 1
	confusion[OnePair][HighCard] = 1
	confusion[HighCard][OnePair] = 1
	if rep.Confusion != confusion {
		t.Errorf("Confusion = %v, want %v", rep.Confusion, confusion)
	}
	ct := rep.ConfusionTable()
	for _, want := range []string{
		"true \\ predicted   high   pair  2pair  trips    str  flush   full  quads sflush",
		"one pair              1      1      0      0      0      0      0      0      0",
		"flush                 0      0      0      0      0      2      0      0      0",
	} {
		if !strings.Contains(ct, want) {
			t.Errorf("confusion table lacks %q:\n%s", want, ct)
		}
	}
	s := rep.String()
	for _, want := range []string{
		"class                 n  correct  invalid accuracy",
		"one pair              3        1        1    33.3%",
		"accuracy 50.0%  macro accuracy 44.4%  valid labels 83.3%  (n=6)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
	if _, err := Evaluate([]string{"flush"}, nil); err == nil || !strings.Contains(err.Error(), "1 predictions for 0 truths") {
		t.Errorf("length mismatch: %v", err)
	}
	if _, err := Evaluate([]string{"flush"}, []Class{12}); err == nil || !strings.Contains(err.Error(), "truth 0 is invalid") {
		t.Errorf("bad truth: %v", err)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
