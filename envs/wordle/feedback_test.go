package wordle

import (
	"strings"
	"testing"
)

func TestScore(t *testing.T) {
	tests := []struct{ guess, answer, want string }{
		{"speed", "abide", "..Y.Y"}, // one E in ABIDE: the first E is yellow, the second gray
		{"llama", "hello", "YY..."}, // two Ls in HELLO, neither in place
		{"allot", "hello", ".YGY."}, // one L green, the other yellow
		{"eerie", "there", "Y.Y.G"}, // final E green uses one E; the first E takes the other
		{"kebab", "abbey", ".YGYY"},
		{"geese", "those", "...GG"}, // THOSE's one E is taken by the green
		{"sissy", "mossy", "..GGG"}, // both Ss of MOSSY are green, so the first S is gray
		{"mamma", "maxim", "GGY.."}, // MAXIM has two Ms: one green, one for the first extra M
		{"crane", "robot", ".Y..."},
		{"crane", "crane", "GGGGG"},
		{"SPEED", "Abide", "..Y.Y"}, // any case
	}
	for _, tc := range tests {
		got, err := Score(tc.guess, tc.answer)
		if err != nil || got.String() != tc.want {
			t.Errorf("Score(%s, %s) = %v, %v; want %s", tc.guess, tc.answer, got, err, tc.want)
		}
		want, _ := ParseFeedback(tc.want)
		if !Consistent(tc.answer, tc.guess, want) {
			t.Errorf("Consistent(%s, %s, %s) = false", tc.answer, tc.guess, tc.want)
		}
	}
	for _, bad := range [][2]string{{"spee", "abide"}, {"speed", "ab1de"}, {"spéed", "abide"}} {
		if _, err := Score(bad[0], bad[1]); err == nil || !strings.Contains(err.Error(), "is not 5 letters") {
			t.Errorf("Score(%q, %q) error = %v", bad[0], bad[1], err)
		}
	}
	if Consistent("hello", "speed", Feedback{0, 0, 1, 0, 1}) {
		t.Error("HELLO should not be consistent with SPEED ..Y.Y")
	}
}

func TestFeedbackCode(t *testing.T) {
	tests := []struct {
		fb   string
		code int
	}{
		{".....", 0}, {"Y....", 1}, {".Y...", 3}, {"....G", 162}, {"GGGGG", 242}, {"G.Y..", 2 + 9},
	}
	for _, tc := range tests {
		f, err := ParseFeedback(tc.fb)
		if err != nil || f.Code() != tc.code {
			t.Errorf("%s.Code() = %d, %v; want %d", tc.fb, f.Code(), err, tc.code)
		}
	}
	for _, bad := range []string{"GGGG", "GGGGX"} {
		if _, err := ParseFeedback(bad); err == nil {
			t.Errorf("ParseFeedback(%q) succeeded", bad)
		}
	}
	if f, _ := ParseFeedback("b-_yg"); f.String() != "...YG" {
		t.Errorf("ParseFeedback aliases: %v", f)
	}
}

func TestDescribe(t *testing.T) {
	fb := func(s string) Feedback { f, _ := ParseFeedback(s); return f }
	tests := []struct {
		turn Turn
		want string
	}{
		{Turn{Guess: "crane", Feedback: fb(".Y...")},
			"C is not in the word; R is in the word but not in position 2; A is not in the word; N is not in the word; E is not in the word."},
		{Turn{Guess: "speed", Feedback: fb("..Y.Y")},
			"S is not in the word; P is not in the word; E is in the word but not in position 3; E in position 4: there is no further E in the word; D is in the word but not in position 5."},
		{Turn{Guess: "cigar", Feedback: fb("GGGGG")},
			"C is in position 1; I is in position 2; G is in position 3; A is in position 4; R is in position 5."},
		{Turn{Guess: "xyzzy", Invalid: `not an allowed word: "xyzzy"`},
			`not accepted (not an allowed word: "xyzzy"); the turn is lost.`},
	}
	for _, tc := range tests {
		if got := Describe(tc.turn); got != tc.want {
			t.Errorf("Describe(%v) =\n%s\nwant\n%s", tc.turn, got, tc.want)
		}
	}
}

func FuzzScore(f *testing.F) {
	f.Add("speed", "abide")
	f.Add("llama", "hello")
	f.Add("eerie", "there")
	f.Add("aaaaa", "aaaab")
	f.Fuzz(func(t *testing.T, guess, answer string) {
		fb, err := Score(guess, answer)
		if err != nil {
			return
		}
		g, a := strings.ToLower(guess), strings.ToLower(answer)
		if !Consistent(a, g, fb) {
			t.Fatalf("answer %s not consistent with its own feedback %v for %s", a, fb, g)
		}
		if fb.Won() != (g == a) {
			t.Fatalf("Won() = %v for %s vs %s", fb.Won(), g, a)
		}
		// Per letter: greens+yellows = min(count in guess, count in answer),
		// and greens are exactly the matching positions.
		for c := byte('a'); c <= 'z'; c++ {
			hits := 0
			for i := 0; i < WordLen; i++ {
				if g[i] == c && fb[i] != Gray {
					hits++
				}
				if g[i] == c && (fb[i] == Green) != (a[i] == c) {
					t.Fatalf("green mismatch at %d for %s vs %s: %v", i, g, a, fb)
				}
			}
			if want := min(strings.Count(g, string(c)), strings.Count(a, string(c))); hits != want {
				t.Fatalf("letter %c: %d hits, want %d (%s vs %s: %v)", c, hits, want, g, a, fb)
			}
		}
		if fb.Code() < 0 || fb.Code() >= NumCodes {
			t.Fatalf("code %d out of range", fb.Code())
		}
	})
}
