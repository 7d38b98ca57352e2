package wordle

import (
	"math"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/reward"
)

// TestLetterCredit checks LetterCredit on boards worked out by hand; each
// board's feedback is stated and checked too.
func TestLetterCredit(t *testing.T) {
	for _, tc := range []struct {
		answer   string
		earlier  []string
		feedback []string // of the earlier guesses, by hand
		guess    string
		want     [WordLen]float64
	}{
		// CRANE against SLATE: C, R, N absent; A and E green.
		{"slate", []string{"crane"}, []string{"..G.G"}, "plate", [5]float64{1, 1, 1, 1, 1}},
		{"slate", []string{"crane"}, []string{"..G.G"}, "crate", [5]float64{0, 0, 1, 1, 1}},
		{"slate", []string{"crane"}, []string{"..G.G"}, "stone", [5]float64{1, 1, 0, 0, 1}}, // O where A is green, N absent
		{"slate", []string{"crane"}, []string{"..G.G"}, "crane", [5]float64{0, 0, 1, 0, 1}}, // the repeat
		// FLOOR against ROBOT: F, L absent; O yellow at 3, green at 4; R yellow at 5.
		{"robot", []string{"floor"}, []string{"..YGY"}, "robot", [5]float64{1, 1, 1, 1, 1}},
		{"robot", []string{"floor"}, []string{"..YGY"}, "error", [5]float64{1, 1, 1, 1, 0}}, // R again at 5
		{"robot", []string{"floor"}, []string{"..YGY"}, "floor", [5]float64{0, 0, 0, 1, 0}},
		// GEESE against THOSE: G absent; S, E green; the gray E's cap E at one copy.
		{"those", []string{"geese"}, []string{"...GG"}, "those", [5]float64{1, 1, 1, 1, 1}},
		{"those", []string{"geese"}, []string{"...GG"}, "elope", [5]float64{0, 1, 1, 0, 1}}, // second E over the cap, P where S is green
		// Two turns: ARISE then TOUCH against TOTAL: A yellow (not at 1), R, I, S, E absent; T green at 1, O green at 2, U, C, H absent.
		{"total", []string{"arise", "touch"}, []string{"Y....", "GG..."}, "total", [5]float64{1, 1, 1, 1, 1}},
		{"total", []string{"arise", "touch"}, []string{"Y....", "GG..."}, "tonal", [5]float64{1, 1, 1, 1, 1}}, // fits every position: N is not ruled out
		{"total", []string{"arise", "touch"}, []string{"Y....", "GG..."}, "abbot", [5]float64{0, 0, 1, 1, 1}}, // A where it was yellow, B where O is green
	} {
		h, err := HistoryFor(tc.answer, tc.earlier)
		if err != nil {
			t.Fatal(err)
		}
		for i, turn := range h {
			if turn.Feedback.String() != tc.feedback[i] {
				t.Fatalf("%s against %s: feedback %s, hand-worked %s", turn.Guess, tc.answer, turn.Feedback, tc.feedback[i])
			}
		}
		got, err := LetterCredit(h, tc.guess)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%v against %s, guess %s: credit %v, want %v", tc.earlier, tc.answer, tc.guess, got, tc.want)
		}
	}
	if _, err := LetterCredit(nil, "toolong"); err == nil || !strings.Contains(err.Error(), `"toolong" is not 5 letters`) {
		t.Errorf("a seven-letter guess: err = %v", err)
	}
}

// TestLetterCreditConsistent checks, on synthetic states, that every guess
// consistent with the feedback (by ScoreMove, an independent check) scores
// 1 on every letter, and that an inconsistent one that scores 1 on every
// letter misses a letter the board requires (a word-level fact).
func TestLetterCreditConsistent(t *testing.T) {
	s := NewStateSampler(7, Answers()[:300])
	words := Answers()
	checked, inconsistent := 0, 0
	for n := 0; n < 60; n++ {
		st := s.Next()
		h := st.History()
		for _, w := range words[:400] {
			b, _ := ScoreMove(st.Answer, h, Move{Guess: w}.Reply())
			got, err := LetterCredit(h, w)
			if err != nil {
				t.Fatal(err)
			}
			all := got == [WordLen]float64{1, 1, 1, 1, 1}
			if b.Consistent == 1 && !all {
				t.Fatalf("%v against %s: consistent %s got %v", st.Earlier, st.Answer, w, got)
			}
			if b.Consistent == 0 && all {
				if !missesRequired(h, w) {
					t.Fatalf("%v against %s: inconsistent %s scores 1 everywhere and misses no required letter", st.Earlier, st.Answer, w)
				}
			}
			if b.Consistent == 0 {
				inconsistent++
			}
			checked++
		}
	}
	t.Logf("%d guesses checked, %d inconsistent", checked, inconsistent)
}

// missesRequired reports whether w has fewer copies of some letter than a
// turn of h shows green or yellow.
func missesRequired(h []Turn, w string) bool {
	for _, t := range h {
		need := map[byte]int{}
		for i := 0; i < WordLen; i++ {
			if t.Feedback[i] != Gray {
				need[t.Guess[i]]++
			}
		}
		for c, n := range need {
			have := 0
			for i := 0; i < WordLen; i++ {
				if w[i] == c {
					have++
				}
			}
			if have < n {
				return true
			}
		}
	}
	return false
}

// TestLetterTokenCredit maps the credit onto token pieces: one letter per
// token, several letters in one token (the smallest credit), a move that
// is not a valid guess (all NaN), pieces that do not join.
func TestLetterTokenCredit(t *testing.T) {
	sample := func(reply string) reward.Sample {
		return reward.Sample{Completion: reply, Answer: "slate", Meta: map[string]string{MetaGuesses: "crane"}}
	}
	nan := math.NaN()
	for _, tc := range []struct {
		pieces []string
		want   []float64
	}{
		{[]string{"<think", ">\n", "</", "think", ">\n", "<guess", ">", "c", "r", "a", "t", "e", "</", "guess", ">"},
			[]float64{nan, nan, nan, nan, nan, nan, nan, 0, 0, 1, 1, 1, nan, nan, nan}},
		{[]string{"<guess>", " pl", "ate", "</guess>"}, []float64{nan, 1, 1, nan}},
		{[]string{"<guess>", "st", "one</guess>"}, []float64{nan, 1, 0}},
		{[]string{"<guess>", "xqzzy", "</guess>"}, []float64{nan, nan, nan}},
		{[]string{"no guess"}, []float64{nan}},
	} {
		reply := ""
		for _, p := range tc.pieces {
			reply += p
		}
		got, err := LetterTokenCredit(sample(reply), tc.pieces)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%q: %d credits, want %d", tc.pieces, len(got), len(tc.want))
		}
		for i := range tc.want {
			if !(got[i] == tc.want[i] || math.IsNaN(got[i]) && math.IsNaN(tc.want[i])) {
				t.Errorf("%q: token %d credit %v, want %v", tc.pieces, i, got, tc.want)
				break
			}
		}
	}
	if _, err := LetterTokenCredit(sample("<guess>crate</guess>"), []string{"<guess>", "cr"}); err == nil || !strings.Contains(err.Error(), "do not join to the completion") {
		t.Errorf("pieces that do not join: err = %v", err)
	}
}
