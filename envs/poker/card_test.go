package poker

import (
	"strings"
	"testing"
)

func TestParseCard(t *testing.T) {
	tests := []struct {
		in   string
		want Card
		err  string
	}{
		{"As", Card{Ace, Spades}, ""},
		{"th", Card{Ten, Hearts}, ""},
		{"10♦", Card{Ten, Diamonds}, ""},
		{"2C", Card{Two, Clubs}, ""},
		{"K♥", Card{King, Hearts}, ""},
		{"", Card{}, `poker: parse card "": empty`},
		{"1s", Card{}, `poker: parse card "1s": bad rank "1"`},
		{"Ax", Card{}, `poker: parse card "Ax": bad suit "x"`},
		{"Ass", Card{}, `bad suit "ss"`},
		{"A", Card{}, `bad suit ""`},
	}
	for _, tc := range tests {
		got, err := ParseCard(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseCard(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseCard(%q) error = %v, want it to contain %q", tc.in, err, tc.err)
		}
	}
}

func TestHandFormats(t *testing.T) {
	h := Hand{{Ace, Spades}, {King, Hearts}, {Ten, Diamonds}, {Nine, Clubs}, {Two, Spades}}
	if got := h.String(); got != "As Kh Td 9c 2s" {
		t.Errorf("String() = %q", got)
	}
	if got := h.Symbols(); got != "A♠ K♥ 10♦ 9♣ 2♠" {
		t.Errorf("Symbols() = %q", got)
	}
	for _, s := range []string{h.String(), h.Symbols(), "as,kh, td, 9c,2s"} {
		if got, err := ParseHand(s); err != nil || got != h {
			t.Errorf("ParseHand(%q) = %v, %v", s, got, err)
		}
	}
	if len(Deck()) != 52 {
		t.Error("deck size")
	}
}

func TestParseHandErrors(t *testing.T) {
	tests := []struct{ in, err string }{
		{"As Kh Td 9c", `poker: parse hand "As Kh Td 9c": 4 cards, want 5`},
		{"As Kh Td 9c 2s 3s", "6 cards, want 5"},
		{"As Kh Td 9c Zz", `poker: parse hand, card 5: poker: parse card "Zz": bad rank "Z"`},
		{"As Kh Td 9c as", "card As appears twice"},
	}
	for _, tc := range tests {
		_, err := ParseHand(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseHand(%q) error = %v, want it to contain %q", tc.in, err, tc.err)
		}
	}
	if err := (Hand{}).Validate(); err == nil || !strings.Contains(err.Error(), "card 1 is invalid") {
		t.Errorf("zero hand: %v", err)
	}
}

func FuzzParseHand(f *testing.F) {
	for _, s := range []string{"As Kh Td 9c 2s", "A♠ K♥ 10♦ 9♣ 2♠", "as,kh,,td 9c 2s", "10 10 10 10 10", "", "♠♠♠♠♠"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHand(s)
		if err != nil {
			return
		}
		if err := h.Validate(); err != nil {
			t.Fatalf("ParseHand(%q) accepted an invalid hand: %v", s, err)
		}
		// Both printed forms round-trip.
		for _, out := range []string{h.String(), h.Symbols()} {
			if h2, err := ParseHand(out); err != nil || h2 != h {
				t.Errorf("round trip of %q via %q: %v, %v", s, out, h2, err)
			}
		}
		Classify(h)
	})
}
