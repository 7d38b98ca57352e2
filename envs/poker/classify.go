package poker

import (
	"fmt"
	"math/bits"
	"strings"
)

// Class is a poker hand class in standard ranking, weakest first.
type Class int

// The nine classes. StraightFlush includes the royal flush.
const (
	HighCard Class = iota
	OnePair
	TwoPair
	ThreeOfAKind
	Straight
	Flush
	FullHouse
	FourOfAKind
	StraightFlush
	NumClasses = 9 // how many classes there are
)

var labels = [NumClasses]string{
	"high card", "one pair", "two pair", "three of a kind", "straight",
	"flush", "full house", "four of a kind", "straight flush",
}

// weights pay more for rarer classes (see Weight).
var weights = [NumClasses]float64{1.0, 1.0, 1.5, 2.0, 2.0, 2.0, 2.5, 3.0, 3.0}

// Classes returns the nine classes, weakest first.
func Classes() []Class {
	cs := make([]Class, NumClasses)
	for i := range cs {
		cs[i] = Class(i)
	}
	return cs
}

// Labels returns the label of each class, weakest first: the only answers
// the policy may give (each followed by EOS under constrained decoding).
func Labels() []string { return append([]string(nil), labels[:]...) }

// Valid reports whether c is one of the nine classes.
func (c Class) Valid() bool { return c >= 0 && c < NumClasses }

// String returns the class's label, e.g. "full house".
func (c Class) String() string {
	if !c.Valid() {
		return fmt.Sprintf("Class(%d)", int(c))
	}
	return labels[c]
}

// Weight returns the reward for naming class c correctly: 1 for high card
// and one pair, 1.5 two pair, 2 three of a kind, straight and flush, 2.5
// full house, 3 four of a kind and straight flush; 0 for an invalid class.
func (c Class) Weight() float64 {
	if !c.Valid() {
		return 0
	}
	return weights[c]
}

// ParseLabel reads a label as the policy writes it: case, surrounding
// white space, runs of spaces, '_' or '-' between words and a trailing
// period are forgiven; anything else is an error.
func ParseLabel(s string) (Class, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(t, ".")
	t = strings.NewReplacer("_", " ", "-", " ").Replace(t)
	t = strings.Join(strings.Fields(t), " ")
	for i, l := range labels {
		if t == l {
			return Class(i), nil
		}
	}
	return 0, fmt.Errorf("poker: unknown label %q (want one of: %s)", s, strings.Join(labels[:], ", "))
}

// wheel is the rank bitmask of A-2-3-4-5 (bit r set for rank r; ace is 14).
const wheel = 1<<Ace | 1<<Two | 1<<Three | 1<<Four | 1<<Five

// Classify returns the class of h. It assumes a valid hand of five distinct
// cards (see Hand.Validate).
func Classify(h Hand) Class {
	var counts [Ace + 1]uint8
	mask := uint16(0)
	flush := true
	for i, c := range h {
		counts[c.Rank]++
		mask |= 1 << c.Rank
		if i > 0 && c.Suit != h[0].Suit {
			flush = false
		}
	}
	distinct := bits.OnesCount16(mask)
	straight := false
	if distinct == 5 {
		lowest := bits.TrailingZeros16(mask)
		straight = mask>>lowest == 0b11111 || mask == wheel
	}
	switch {
	case straight && flush:
		return StraightFlush
	case distinct == 2: // 4+1 or 3+2
		for _, n := range counts {
			if n == 4 {
				return FourOfAKind
			}
		}
		return FullHouse
	case flush:
		return Flush
	case straight:
		return Straight
	case distinct == 3: // 3+1+1 or 2+2+1
		for _, n := range counts {
			if n == 3 {
				return ThreeOfAKind
			}
		}
		return TwoPair
	case distinct == 4:
		return OnePair
	}
	return HighCard
}
