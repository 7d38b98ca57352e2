package wordle

import (
	"math"
	"slices"
	"testing"
)

func TestStateSampler(t *testing.T) {
	train, test := SplitAnswers(1, 315)
	a, b := NewStateSampler(7, train), NewStateSampler(7, train)
	var lens [5]int
	for i := range 300 {
		s, s2 := a.Next(), b.Next()
		if s.Answer != s2.Answer || !slices.Equal(s.Earlier, s2.Earlier) {
			t.Fatalf("state %d differs for the same seed", i)
		}
		if !slices.Contains(train, s.Answer) || len(s.Earlier) > 4 {
			t.Fatalf("state %d: %+v", i, s)
		}
		lens[len(s.Earlier)]++
		// Each earlier guess fits all feedback before it and is not the answer.
		for j, g := range s.Earlier {
			if g == s.Answer || !IsAllowed(g) {
				t.Fatalf("state %d: bad guess %q", i, g)
			}
			for _, prev := range s.History()[:j] {
				if score(prev.Guess, g) != prev.Feedback {
					t.Fatalf("state %d: guess %q contradicts %v", i, g, prev)
				}
			}
		}
		if g := NewGame(); g.Reset(s.Answer, s.Earlier) != nil {
			t.Fatalf("state %d does not Reset", i)
		}
	}
	for k, n := range lens {
		if n < 30 { // about 60 each
			t.Errorf("%d earlier guesses drawn %d times of 300", k, n)
		}
	}
	_ = test
	if e := NewStateSampler(1, nil).Next(); e.Answer != "" || e.Earlier != nil {
		t.Error("empty sampler")
	}
}

func TestSplitAnswers(t *testing.T) {
	train, test := SplitAnswers(3, 300)
	if len(train) != 2015 || len(test) != 300 {
		t.Fatalf("sizes %d, %d", len(train), len(test))
	}
	all := append(append([]string(nil), train...), test...)
	slices.Sort(all)
	if !slices.Equal(all, Answers()) {
		t.Error("train ∪ test != answers")
	}
	tr2, te2 := SplitAnswers(3, 300)
	if !slices.Equal(train, tr2) || !slices.Equal(test, te2) {
		t.Error("not deterministic")
	}
	if _, te := SplitAnswers(3, 99999); len(te) != 2315 {
		t.Error("clamp")
	}
}

func TestEntropy(t *testing.T) {
	// ABXYZ splits these four answers into {aaaaa}, {bbbbb}, {ccccc, ddddd}:
	// H = ¼·2 + ¼·2 + ½·1 = 1.5 bits.
	h, err := FeedbackEntropy("abxyz", []string{"aaaaa", "bbbbb", "ccccc", "ddddd"})
	if err != nil || math.Abs(h-1.5) > 1e-12 {
		t.Errorf("entropy = %v, %v; want 1.5", h, err)
	}
	if _, err := FeedbackEntropy("abc", nil); err == nil {
		t.Error("short guess accepted")
	}
	r, err := RankStartWords([]string{"zzzzz", "abxyz", "aaaaa"}, []string{"aaaaa", "bbbbb", "ccccc", "ddddd"})
	// AAAAA: {aaaaa} vs 3 others → H(¼,¾) ≈ 0.811; ZZZZZ: 0.
	if err != nil || r[0].Word != "abxyz" || r[1].Word != "aaaaa" || math.Abs(r[1].Bits-0.8112781244591328) > 1e-12 || r[2].Bits != 0 {
		t.Errorf("ranking = %+v, %v", r, err)
	}
}

// TestStartWords checks the shipped ranking: the published values for the
// 2,315-answer list are SOARE 5.886, ROATE 5.883, RAISE 5.878 bits.
func TestStartWords(t *testing.T) {
	s := StartWords()
	if len(s) < 100 {
		t.Fatalf("%d start words", len(s))
	}
	want := []StartWord{{"soare", 5.886}, {"roate", 5.883}, {"raise", 5.878}}
	for i, w := range want {
		if s[i].Word != w.Word || math.Abs(s[i].Bits-w.Bits) > 0.001 {
			t.Errorf("StartWords()[%d] = %+v, want %+v", i, s[i], w)
		}
	}
	if testing.Short() {
		return
	}
	// The embedded file is what RankStartWords computes (about a second).
	ranked, err := RankStartWords(Allowed(), Answers())
	if err != nil {
		t.Fatal(err)
	}
	for i := range s {
		if s[i].Word != ranked[i].Word || math.Abs(s[i].Bits-ranked[i].Bits) > 1e-6 {
			t.Fatalf("line %d: file %+v, computed %+v (rerun cmd/startwords)", i, s[i], ranked[i])
		}
	}
}
