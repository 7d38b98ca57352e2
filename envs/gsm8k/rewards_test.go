package gsm8k

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/grpokit/grpokit/reward"
)

const good = "<reasoning>\nr\n</reasoning>\n<answer>\n5\n</answer>\n"

func TestRewards(t *testing.T) {
	type fn = func(p, c, a string) float64
	tests := []struct {
		name       string
		f          fn
		completion string
		answer     string
		want       float64
	}{
		{"strict ok", StrictFormatReward, good, "", 0.5},
		{"strict multi-line reasoning", StrictFormatReward, "<reasoning>\na\nb\n</reasoning>\n<answer>\n5\n</answer>\n", "", 0.5},
		{"strict extra final newline", StrictFormatReward, good + "\n", "", 0.5},
		{"strict no final newline", StrictFormatReward, good[:len(good)-1], "", 0},
		{"strict text after", StrictFormatReward, good + "bye", "", 0},
		{"strict one line", StrictFormatReward, "<reasoning>r</reasoning><answer>5</answer>", "", 0},
		{"strict two answers", StrictFormatReward, "<reasoning>\nr\n</reasoning>\n<answer>\n5\n</answer>\n<answer>\n6\n</answer>\n", "", 0},
		{"soft one line", SoftFormatReward, "<reasoning>r</reasoning> <answer>5</answer>", "", 0.5},
		{"soft strict form", SoftFormatReward, good, "", 0.5},
		{"soft text after", SoftFormatReward, "<reasoning>r</reasoning><answer>5</answer> ok", "", 0},
		{"soft no reasoning", SoftFormatReward, "<answer>5</answer>", "", 0},
		{"int", IntReward, "<answer>\n42\n</answer>", "", 0.5},
		{"int negative", IntReward, "<answer>-10</answer>", "", 0.5},
		{"int comma", IntReward, "<answer>1,234</answer>", "", 0},
		{"int decimal", IntReward, "<answer>3.5</answer>", "", 0},
		{"int untagged (seed quirk)", IntReward, " 42 ", "", 0.5},
		{"correct", CorrectnessReward, good, "5", 2},
		{"correct dollar is wrong", CorrectnessReward, "<answer>$5</answer>", "5", 0},
		{"correct wrong", CorrectnessReward, good, "6", 0},
		{"correct untagged (seed quirk)", CorrectnessReward, "5", "5", 2},
		// All four markers once, nothing after: 4 × 0.125.
		{"xml full", XMLCountReward, good, "", 0.5},
		// "xyz" after "\n</answer>\n": 0.003 off twice.
		{"xml trailing text", XMLCountReward, good + "xyz", "", 0.494},
		// No "\n</answer>\n", so the seed subtracts the whole length (47
		// runes) once and adds 0.001 for the empty tail: 0.5 - 0.047 + 0.001.
		{"xml no final newline", XMLCountReward, good[:len(good)-1], "", 0.454},
		{"xml one line", XMLCountReward, "<reasoning>r</reasoning><answer>5</answer>", "", 0},
		// Only "<reasoning>\n" and "\n</reasoning>\n" match.
		{"xml half", XMLCountReward, "<reasoning>\nr\n</reasoning>\n<answer>5</answer>", "", 0.25},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f("q", tc.completion, tc.answer); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("= %v, want %v for %q", got, tc.want, tc.completion)
			}
		})
	}
}

func TestRewardsEvaluator(t *testing.T) {
	res, err := (&reward.Evaluator{Rewards: Rewards()}).Evaluate(context.Background(),
		[]reward.Sample{{Completion: good, Answer: "5"}})
	if err != nil {
		t.Fatal(err)
	}
	// xmlcount 0.5 + soft 0.5 + strict 0.5 + int 0.5 + correctness 2.
	if math.Abs(res.Totals[0]-4) > 1e-12 || res.Stats[4].Name != "correctness" {
		t.Errorf("totals = %v, stats = %+v", res.Totals, res.Stats)
	}
}

func TestExtraction(t *testing.T) {
	tests := []struct {
		in                string
		strict, lenient   float64
		strictErr, lenErr error
	}{
		{"<answer>$1,234.00</answer>", 1234, 1234, nil, nil},
		{"<answer>\n-5\n</answer>", -5, -5, nil, nil},
		{"<answer>The answer is 12.</answer>", 12, 12, nil, nil},
		{"<answer>1</answer> then <answer>2</answer>", 2, 2, nil, nil},
		{"<answer>none</answer>", 0, 0, ErrNoNumber, ErrNoNumber},
		{"<answer>7</answer> but maybe 8", 7, 8, nil, nil},
		{"so she makes $1,234.00.", 0, 1234, ErrNoAnswerTag, nil},
		{"It's -3.", 0, -3, ErrNoAnswerTag, nil},
		{"I don't know", 0, 0, ErrNoAnswerTag, ErrNoNumber},
		{"", 0, 0, ErrNoAnswerTag, ErrNoNumber},
	}
	for _, tc := range tests {
		v, err := StrictAnswer(tc.in)
		if !errors.Is(err, tc.strictErr) || (err == nil && v != tc.strict) {
			t.Errorf("StrictAnswer(%q) = %v, %v; want %v, %v", tc.in, v, err, tc.strict, tc.strictErr)
		}
		v, err = LenientAnswer(tc.in)
		if !errors.Is(err, tc.lenErr) || (err == nil && v != tc.lenient) {
			t.Errorf("LenientAnswer(%q) = %v, %v; want %v, %v", tc.in, v, err, tc.lenient, tc.lenErr)
		}
	}
	if got := XMLAnswer("a <answer> 9 </answer> b"); got != "9" {
		t.Errorf("XMLAnswer = %q", got)
	}
}

func FuzzStrictAnswer(f *testing.F) {
	for _, s := range []string{good, "<answer>$1,234.00</answer>", "<answer>", "</answer><answer>", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := StrictAnswer(s); err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Errorf("StrictAnswer(%q) = %v", s, v)
		}
		LenientAnswer(s)
		for _, r := range Rewards() {
			if v := r.Scorer.Score(reward.Sample{Completion: s, Answer: "5"}); math.IsNaN(v) || v > 2 {
				t.Errorf("%s(%q) = %v", r.Name, s, v)
			}
		}
	})
}

// TestRewardsMatchPython checks the five rewards against their Python
// port (bench/trl/gsm8k_rewards.py), which the TRL side of the comparison
// in bench/trl trains with: testdata/python_rewards.json holds its scores
// of hand-picked completions (regenerate:
// python bench/trl/gsm8k_rewards.py > envs/gsm8k/testdata/python_rewards.json).
func TestRewardsMatchPython(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "python_rewards.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Completion string             `json:"completion"`
		Answer     string             `json:"answer"`
		Rewards    map[string]float64 `json:"rewards"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("%d cases, want ≥ 10", len(cases))
	}
	for _, c := range cases {
		for _, r := range Rewards() {
			want, ok := c.Rewards[r.Name]
			if !ok {
				t.Fatalf("%q: no Python score for %s", c.Completion, r.Name)
			}
			got := r.Scorer.Score(reward.Sample{Completion: c.Completion, Answer: c.Answer})
			if math.Abs(got-want) > 1e-12 {
				t.Errorf("%s(%q, answer %q) = %g, Python %g", r.Name, c.Completion, c.Answer, got, want)
			}
		}
	}
}
