package poker

import (
	"fmt"
	"math/rand/v2"
)

// Sampler draws hands deterministically from a seed. Next yields the nine
// classes equally often (each block of nine draws holds every class once,
// in shuffled order); within a class, every hand of that class is equally
// likely. A Sampler is not safe for concurrent use.
type Sampler struct {
	rng   *rand.Rand
	order []Class // the rest of the current block of nine
}

// NewSampler returns a Sampler whose draws depend only on seed.
func NewSampler(seed uint64) *Sampler {
	return &Sampler{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
}

// Example is one task instance.
type Example struct {
	Prompt string // the text to give the policy (see Prompt)
	Answer string // the true class's label
	Hand   Hand
	Class  Class
}

// Next returns the next example of the balanced stream.
func (s *Sampler) Next() Example {
	if len(s.order) == 0 {
		s.order = Classes()
		s.rng.Shuffle(len(s.order), func(i, j int) { s.order[i], s.order[j] = s.order[j], s.order[i] })
	}
	c := s.order[0]
	s.order = s.order[1:]
	h := s.Hand(c)
	return Example{Prompt: Prompt(h), Answer: c.String(), Hand: h, Class: c}
}

// Batch returns the next n examples.
func (s *Sampler) Batch(n int) []Example {
	out := make([]Example, n)
	for i := range out {
		out[i] = s.Next()
	}
	return out
}

// Hand builds a uniformly random hand of class c, with its cards in random
// order. It panics on an invalid class (a programming error).
func (s *Sampler) Hand(c Class) Hand {
	var h Hand
	switch c {
	case StraightFlush:
		top := s.straightTop()
		suit := s.suit()
		for i := range 5 {
			h[i] = Card{straightRank(top, i), suit}
		}
	case FourOfAKind:
		r := s.ranks(2)
		for i, suit := range []Suit{Clubs, Diamonds, Hearts, Spades} {
			h[i] = Card{r[0], suit}
		}
		h[4] = Card{r[1], s.suit()}
	case FullHouse:
		r := s.ranks(2)
		for i, suit := range s.suits(3) {
			h[i] = Card{r[0], suit}
		}
		for i, suit := range s.suits(2) {
			h[3+i] = Card{r[1], suit}
		}
	case Flush:
		r := s.nonStraightRanks()
		suit := s.suit()
		for i := range 5 {
			h[i] = Card{r[i], suit}
		}
	case Straight:
		top := s.straightTop()
		suits := s.notAllSameSuits()
		for i := range 5 {
			h[i] = Card{straightRank(top, i), suits[i]}
		}
	case ThreeOfAKind:
		r := s.ranks(3)
		for i, suit := range s.suits(3) {
			h[i] = Card{r[0], suit}
		}
		h[3] = Card{r[1], s.suit()}
		h[4] = Card{r[2], s.suit()}
	case TwoPair:
		r := s.ranks(3)
		for i, suit := range s.suits(2) {
			h[i] = Card{r[0], suit}
		}
		for i, suit := range s.suits(2) {
			h[2+i] = Card{r[1], suit}
		}
		h[4] = Card{r[2], s.suit()}
	case OnePair:
		r := s.ranks(4)
		for i, suit := range s.suits(2) {
			h[i] = Card{r[0], suit}
		}
		for i := 1; i < 4; i++ {
			h[1+i] = Card{r[i], s.suit()}
		}
	case HighCard:
		r := s.nonStraightRanks()
		suits := s.notAllSameSuits()
		for i := range 5 {
			h[i] = Card{r[i], suits[i]}
		}
	default:
		panic(fmt.Sprintf("poker: Sampler.Hand: invalid class %d", int(c)))
	}
	s.rng.Shuffle(5, func(i, j int) { h[i], h[j] = h[j], h[i] })
	return h
}

// straightTop draws the top rank of a straight: Five (the wheel) to Ace.
func (s *Sampler) straightTop() Rank { return Five + Rank(s.rng.IntN(10)) }

// straightRank is the i-th card's rank of the straight ending at top; the
// wheel's lowest card is the ace.
func straightRank(top Rank, i int) Rank {
	r := top - Rank(i)
	if r < Two {
		return Ace
	}
	return r
}

func (s *Sampler) suit() Suit { return Suit(s.rng.IntN(4)) }

// suits draws n distinct suits.
func (s *Sampler) suits(n int) []Suit {
	p := s.rng.Perm(4)[:n]
	out := make([]Suit, n)
	for i, v := range p {
		out[i] = Suit(v)
	}
	return out
}

// ranks draws n distinct ranks, in random order (the order decides the
// roles: first the trips or pair, then kickers).
func (s *Sampler) ranks(n int) []Rank {
	p := s.rng.Perm(13)[:n]
	out := make([]Rank, n)
	for i, v := range p {
		out[i] = Two + Rank(v)
	}
	return out
}

// nonStraightRanks draws five distinct ranks that do not form a straight
// (1,277 of the 1,287 sets; the rare straight set is drawn again).
func (s *Sampler) nonStraightRanks() []Rank {
	for {
		r := s.ranks(5)
		mask := 0
		for _, v := range r {
			mask |= 1 << v
		}
		low := 0
		for mask>>low&1 == 0 {
			low++
		}
		if mask>>low != 0b11111 && mask != wheel {
			return r
		}
	}
}

// notAllSameSuits draws five independent suits that are not all equal
// (1,020 of 1,024 cases; the rare flush is drawn again).
func (s *Sampler) notAllSameSuits() [5]Suit {
	for {
		var out [5]Suit
		same := true
		for i := range out {
			out[i] = s.suit()
			if out[i] != out[0] {
				same = false
			}
		}
		if !same {
			return out
		}
	}
}
