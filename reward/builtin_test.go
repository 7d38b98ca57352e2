package reward

import (
	"math"
	"testing"
)

func TestBuiltins(t *testing.T) {
	tests := []struct {
		name             string
		f                Func
		completion, want string
		score            float64
	}{
		{"regex match", MustRegex(`^\d+$`), "123", "", 1},
		{"regex no match", MustRegex(`^\d+$`), "12a", "", 0},
		{"structure ok", TagStructure("think", "guess"), "<think>hmm\nok</think>\n<guess>crane</guess>\n", "", 1},
		{"structure leading space", TagStructure("think", "guess"), "  <think>x</think><guess>y</guess>", "", 1},
		{"structure wrong order", TagStructure("think", "guess"), "<guess>y</guess><think>x</think>", "", 0},
		{"structure text after", TagStructure("think", "guess"), "<think>x</think><guess>y</guess> thanks", "", 0},
		{"structure text before", TagStructure("think", "guess"), "ok <think>x</think><guess>y</guess>", "", 0},
		{"structure duplicate tag", TagStructure("think", "guess"), "<think>x</think><think>x</think><guess>y</guess>", "", 0},
		{"structure missing close", TagStructure("think", "guess"), "<think>x<guess>y</guess>", "", 0},
		// 4 tag occurrences, each worth 1/4.
		{"count all", TagCount("reasoning", "answer"), "<reasoning>a</reasoning><answer>b</answer>", "", 1},
		{"count three", TagCount("reasoning", "answer"), "<reasoning>a</reasoning><answer>b", "", 0.75},
		{"count dup open", TagCount("reasoning", "answer"), "<reasoning><reasoning>a</reasoning>", "", 0.25},
		{"count none", TagCount("reasoning", "answer"), "plain", "", 0},
		{"exact trims", ExactMatch(), " 42\n", "42", 1},
		{"exact case", ExactMatch(), "Paris", "paris", 0},
		{"normalized", NormalizedMatch(), "  The  Answer: PARIS! ", "the answer paris", 1},
		{"normalized differs", NormalizedMatch(), "Paris, France", "paris", 0},
		{"numeric dollars", NumericMatch(0), "The total is $1,234.00.", "1234", 1},
		{"numeric last", NumericMatch(0), "3 apples + 4 = 7", "7", 1},
		{"numeric wrong", NumericMatch(0), "it is 8", "7", 0},
		{"numeric tol", NumericMatch(0.01), "0.333", "0.33", 1},
		{"numeric no number", NumericMatch(0), "no idea", "7", 0},
		{"numeric bad answer", NumericMatch(0), "7", "seven", 0},
		{"numeric negative", NumericMatch(0), "answer: -12", "-12", 1},
		{"on tag", OnTag("answer", NumericMatch(0)), "<answer> 18 </answer> 99", "18", 1},
		{"on tag missing", OnTag("answer", NumericMatch(0)), "18", "18", 0},
		{"length under", LengthPenalty(5, 0.1), "abcde", "", 0},
		// 8 runes ("é" is one rune), 3 over the limit: -0.3.
		{"length over", LengthPenalty(5, 0.1), "abcdéfgh", "", -0.3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f("prompt", tc.completion, tc.want); math.Abs(got-tc.score) > 1e-12 {
				t.Errorf("score(%q, %q) = %v, want %v", tc.completion, tc.want, got, tc.score)
			}
		})
	}
}

func TestRegexError(t *testing.T) {
	_, err := Regex(`(`)
	if err == nil || err.Error()[:7] != "reward:" {
		t.Fatalf("Regex(`(`) error = %v, want a reward: error", err)
	}
}

func TestTagContent(t *testing.T) {
	tests := []struct {
		text, tag, want string
		ok              bool
	}{
		{"<answer>\n42\n</answer>", "answer", "42", true},
		{"<answer>1</answer> then <answer>2</answer>", "answer", "2", true},
		{"<answer>open only", "answer", "", false},
		{"none", "answer", "", false},
		{"</answer>x<answer>", "answer", "", false},
	}
	for _, tc := range tests {
		got, ok := TagContent(tc.text, tc.tag)
		if got != tc.want || ok != tc.ok {
			t.Errorf("TagContent(%q, %q) = %q, %v; want %q, %v", tc.text, tc.tag, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseNumber(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"42", 42, true},
		{" $1,234.00 ", 1234, true},
		{"-7.", -7, true},
		{"$-5", -5, true},
		{"-$5", -5, true},
		{"50%", 50, true},
		{"3.5!", 3.5, true},
		{".5", 0.5, true},
		{"1,000,000", 1e6, true},
		{"−3", -3, true}, // U+2212 minus sign
		{"", 0, false},
		{"abc", 0, false},
		{"12 apples", 0, false},
		{"1 2", 0, false},
		{"$", 0, false},
		{"-", 0, false},
	}
	for _, tc := range tests {
		got, err := ParseNumber(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseNumber(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && err.Error()[:7] != "reward:" {
			t.Errorf("ParseNumber(%q) error %q lacks the package prefix", tc.in, err)
		}
	}
}

func TestLastNumber(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"so she pays $1,234.00.", 1234, true},
		{"He had 5 and lost 8, leaving -3.", -3, true},
		{"pages 3-5", 5, true}, // a hyphen, not a minus
		{"x-2", 2, true},
		{"costs 12.", 12, true},
		{"a list: 1,2,3", 123, true}, // commas read as thousands separators
		{"no digits here", 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		got, ok := LastNumber(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("LastNumber(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestNormalize(t *testing.T) {
	tests := map[string]string{
		"  The  Answer: Paris! ": "the answer paris",
		"":                       "",
		"A\tB\nC":                "a b c",
		"$5.00":                  "500",
	}
	for in, want := range tests {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"$1,234.00", "-7.", "50%", "", "abc", "−3", "$-", "1e5", ".", ",5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseNumber(s)
		if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Errorf("ParseNumber(%q) = %v", s, v)
		}
		LastNumber(s)
		Normalize(s)
	})
}
