package poker

import (
	"testing"
)

func mustHand(t testing.TB, s string) Hand {
	t.Helper()
	h, err := ParseHand(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestClassify(t *testing.T) {
	tests := []struct {
		hand string
		want Class
	}{
		{"As Ks Qs Js Ts", StraightFlush}, // royal flush
		{"5h 4h 3h 2h Ah", StraightFlush}, // steel wheel
		{"9d Kd Td Jd Qd", StraightFlush},
		{"Ac 2d 3h 4s 5c", Straight}, // wheel: ace low
		{"Ac Kd Qh Js Tc", Straight}, // broadway: ace high
		{"6c 7d 8h 9s Tc", Straight},
		{"Kc Ad 2h 3s 4c", HighCard}, // no wrap-around
		{"Qc Kd Ah 2s 3c", HighCard},
		{"9c 9d 9h 9s 2c", FourOfAKind},
		{"2c 2d 2h Ks Kc", FullHouse},
		{"Kc Kd Kh 2s 2c", FullHouse},
		{"2h 7h 9h Jh Kh", Flush},
		{"Ah 2h 3h 4h 6h", Flush}, // nearly a wheel
		{"7c 7d 7h Ks 2c", ThreeOfAKind},
		{"Jc Jd 4h 4s Ac", TwoPair},
		{"Tc Td 4h 8s Ac", OnePair},
		{"2c 4d 6h 8s Tc", HighCard},
		{"Ac Kd Qh Js 9c", HighCard},
	}
	for _, tc := range tests {
		if got := Classify(mustHand(t, tc.hand)); got != tc.want {
			t.Errorf("Classify(%s) = %v, want %v", tc.hand, got, tc.want)
		}
	}
}

// TestClassifyExhaustive checks the oracle against the textbook counts of
// all C(52,5) = 2,598,960 hands.
func TestClassifyExhaustive(t *testing.T) {
	// About 30 ms: cheap enough to run under -short too.
	want := [NumClasses]int{1302540, 1098240, 123552, 54912, 10200, 5108, 3744, 624, 40}
	var got [NumClasses]int
	d := Deck()
	var h Hand
	for a := 0; a < 52; a++ {
		h[0] = d[a]
		for b := a + 1; b < 52; b++ {
			h[1] = d[b]
			for c := b + 1; c < 52; c++ {
				h[2] = d[c]
				for e := c + 1; e < 52; e++ {
					h[3] = d[e]
					for f := e + 1; f < 52; f++ {
						h[4] = d[f]
						got[Classify(h)]++
					}
				}
			}
		}
	}
	if got != want {
		t.Errorf("class counts = %v, want %v", got, want)
	}
}

func TestLabels(t *testing.T) {
	ls := Labels()
	if len(ls) != 9 || ls[0] != "high card" || ls[8] != "straight flush" {
		t.Fatalf("Labels() = %q", ls)
	}
	ls[0] = "changed"
	if Labels()[0] != "high card" {
		t.Error("Labels returns the package's own slice")
	}
	wantW := []float64{1, 1, 1.5, 2, 2, 2, 2.5, 3, 3}
	for i, c := range Classes() {
		if c.Weight() != wantW[i] {
			t.Errorf("%v.Weight() = %v, want %v", c, c.Weight(), wantW[i])
		}
	}
	if Class(9).Weight() != 0 || Class(-1).String() != "Class(-1)" {
		t.Error("invalid class handling")
	}
}

func TestParseLabel(t *testing.T) {
	tests := []struct {
		in   string
		want Class
		ok   bool
	}{
		{"full house", FullHouse, true},
		{"  Full House.\n", FullHouse, true},
		{"three_of_a_kind", ThreeOfAKind, true},
		{"straight-flush", StraightFlush, true},
		{"two  pair", TwoPair, true},
		{"straight", Straight, true},
		{"royal flush", 0, false},
		{"pair", 0, false},
		{"full house because", 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		got, err := ParseLabel(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseLabel(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	_, err := ParseLabel("royal flush")
	if want := `poker: unknown label "royal flush" (want one of: high card, one pair,`; err == nil || err.Error()[:len(want)] != want {
		t.Errorf("error = %v", err)
	}
}

func FuzzParseLabel(f *testing.F) {
	for _, l := range Labels() {
		f.Add(l)
	}
	f.Add("Royal Flush.")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseLabel(s)
		if err != nil {
			return
		}
		// A parsed label round-trips.
		if c2, err := ParseLabel(c.String()); err != nil || c2 != c {
			t.Errorf("ParseLabel(%q) = %v, but its label does not round-trip", s, c)
		}
	})
}
