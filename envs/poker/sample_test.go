package poker

import (
	"testing"
)

func TestSamplerClasses(t *testing.T) {
	s := NewSampler(7)
	for _, c := range Classes() {
		for range 500 {
			h := s.Hand(c)
			if err := h.Validate(); err != nil {
				t.Fatalf("Hand(%v) = %v: %v", c, h, err)
			}
			if got := Classify(h); got != c {
				t.Fatalf("Hand(%v) = %v, which is a %v", c, h, got)
			}
		}
	}
}

// TestSamplerCoversStraightFlushes draws 4,000 straight flushes: each of the
// 40 should appear about 100 times if the draw is uniform.
func TestSamplerCoversStraightFlushes(t *testing.T) {
	s := NewSampler(1)
	counts := map[[2]int]int{} // {lowest rank incl. ace-low, suit}
	for range 4000 {
		h := s.Hand(StraightFlush)
		top := Rank(0)
		mask := 0
		for _, c := range h {
			mask |= 1 << c.Rank
			top = max(top, c.Rank)
		}
		if mask == wheel {
			top = Five
		}
		counts[[2]int{int(top), int(h[0].Suit)}]++
	}
	if len(counts) != 40 {
		t.Fatalf("saw %d distinct straight flushes, want 40", len(counts))
	}
	for k, n := range counts {
		if n < 50 || n > 160 {
			t.Errorf("straight flush %v drawn %d times of 4000, want about 100", k, n)
		}
	}
}

func TestSamplerBalancedAndDeterministic(t *testing.T) {
	a, b := NewSampler(42), NewSampler(42)
	ea, eb := a.Batch(90), b.Batch(90)
	var counts [NumClasses]int
	for i := range ea {
		if ea[i] != eb[i] {
			t.Fatalf("example %d differs for the same seed: %v vs %v", i, ea[i], eb[i])
		}
		counts[ea[i].Class]++
		if ea[i].Answer != ea[i].Class.String() || Classify(ea[i].Hand) != ea[i].Class {
			t.Errorf("example %d inconsistent: %+v", i, ea[i])
		}
	}
	for c, n := range counts {
		if n != 10 {
			t.Errorf("class %v drawn %d times in 90, want 10", Class(c), n)
		}
	}
	if c := NewSampler(43).Batch(90); c[0] == ea[0] && c[1] == ea[1] && c[2] == ea[2] {
		t.Error("different seeds gave the same stream")
	}
}
