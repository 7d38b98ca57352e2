package poker

import (
	"fmt"
	"strings"
)

// Rank is a card's rank, from Two (2) to Ace (14).
type Rank uint8

// The ranks. An ace also plays low in the straight A-2-3-4-5.
const (
	Two Rank = iota + 2
	Three
	Four
	Five
	Six
	Seven
	Eight
	Nine
	Ten
	Jack
	Queen
	King
	Ace
)

// Suit is a card's suit.
type Suit uint8

// The suits, in the order the deck lists them.
const (
	Clubs Suit = iota
	Diamonds
	Hearts
	Spades
)

const (
	rankChars = "23456789TJQKA"
	suitChars = "cdhs"
)

var suitSymbols = [4]string{"♣", "♦", "♥", "♠"}

// Card is one playing card. The zero Card is invalid.
type Card struct {
	Rank Rank
	Suit Suit
}

// Valid reports whether c is one of the 52 cards.
func (c Card) Valid() bool { return c.Rank >= Two && c.Rank <= Ace && c.Suit <= Spades }

// String returns the rank and suit letter, e.g. "As", "Th", "2c".
func (c Card) String() string {
	if !c.Valid() {
		return fmt.Sprintf("Card(%d,%d)", c.Rank, c.Suit)
	}
	return string(rankChars[c.Rank-Two]) + string(suitChars[c.Suit])
}

// Symbol returns the rank and suit symbol, e.g. "A♠", "10♥", "2♣".
func (c Card) Symbol() string {
	if !c.Valid() {
		return c.String()
	}
	r := string(rankChars[c.Rank-Two])
	if c.Rank == Ten {
		r = "10"
	}
	return r + suitSymbols[c.Suit]
}

// index numbers the 52 cards 0..51.
func (c Card) index() int { return int(c.Rank-Two)*4 + int(c.Suit) }

// Deck returns the 52 cards, ranks Two to Ace, each in suit order.
func Deck() []Card {
	d := make([]Card, 0, 52)
	for r := Two; r <= Ace; r++ {
		for s := Clubs; s <= Spades; s++ {
			d = append(d, Card{r, s})
		}
	}
	return d
}

// ParseCard reads a card written as rank then suit: rank one of
// 23456789TJQKA (or "10"), any case; suit one of cdhs or ♣♦♥♠.
func ParseCard(s string) (Card, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return Card{}, fmt.Errorf("poker: parse card %q: empty", s)
	}
	var rank Rank
	var rest string
	if strings.HasPrefix(t, "10") {
		rank, rest = Ten, t[2:]
	} else {
		i := strings.IndexByte(rankChars, upper(t[0]))
		if i < 0 {
			return Card{}, fmt.Errorf("poker: parse card %q: bad rank %q (want one of 23456789TJQKA)", s, t[:1])
		}
		rank, rest = Two+Rank(i), t[1:]
	}
	for i, sym := range suitSymbols {
		if rest == sym || (len(rest) == 1 && lower(rest[0]) == suitChars[i]) {
			return Card{rank, Suit(i)}, nil
		}
	}
	return Card{}, fmt.Errorf("poker: parse card %q: bad suit %q (want one of cdhs or ♣♦♥♠)", s, rest)
}

func upper(b byte) byte {
	if 'a' <= b && b <= 'z' {
		return b - 'a' + 'A'
	}
	return b
}

func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b - 'A' + 'a'
	}
	return b
}

// Hand is five cards. Order does not matter to Classify.
type Hand [5]Card

// String returns the cards in short form separated by spaces: "As Kh Qd Jc Ts".
func (h Hand) String() string {
	parts := make([]string, len(h))
	for i, c := range h {
		parts[i] = c.String()
	}
	return strings.Join(parts, " ")
}

// Symbols returns the cards in symbol form: "A♠ K♥ Q♦ J♣ 10♠".
func (h Hand) Symbols() string {
	parts := make([]string, len(h))
	for i, c := range h {
		parts[i] = c.Symbol()
	}
	return strings.Join(parts, " ")
}

// Validate returns an error when a card is invalid or appears twice.
func (h Hand) Validate() error {
	var seen [52]bool
	for i, c := range h {
		if !c.Valid() {
			return fmt.Errorf("poker: card %d is invalid (%v)", i+1, c)
		}
		if seen[c.index()] {
			return fmt.Errorf("poker: card %v appears twice", c)
		}
		seen[c.index()] = true
	}
	return nil
}

// ParseHand reads five distinct cards separated by white space or commas,
// in either form that String and Symbols write.
func ParseHand(s string) (Hand, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	if len(fields) != 5 {
		return Hand{}, fmt.Errorf("poker: parse hand %q: %d cards, want 5", s, len(fields))
	}
	var h Hand
	for i, f := range fields {
		c, err := ParseCard(f)
		if err != nil {
			return Hand{}, fmt.Errorf("poker: parse hand, card %d: %w", i+1, err)
		}
		h[i] = c
	}
	if err := h.Validate(); err != nil {
		return Hand{}, fmt.Errorf("poker: parse hand %q: %w", s, err)
	}
	return h, nil
}
