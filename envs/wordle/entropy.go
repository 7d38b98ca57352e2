package wordle

import (
	"fmt"
	"math"
	"sort"
)

// FeedbackEntropy returns the entropy, in bits, of the feedback that guess
// receives when the answer is drawn uniformly from answers: the expected
// information the guess gives. Words must be five letters.
func FeedbackEntropy(guess string, answers []string) (float64, error) {
	g, err := normalize(guess)
	if err != nil {
		return 0, err
	}
	as := make([]string, len(answers))
	for i, a := range answers {
		if as[i], err = normalize(a); err != nil {
			return 0, err
		}
	}
	var counts [NumCodes]int
	return entropy(g, as, &counts), nil
}

// entropy is FeedbackEntropy for normalized words, using counts as scratch.
func entropy(guess string, answers []string, counts *[NumCodes]int) float64 {
	*counts = [NumCodes]int{}
	for _, a := range answers {
		counts[score(guess, a).Code()]++
	}
	n := float64(len(answers))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// RankStartWords scores every guess by FeedbackEntropy over answers and
// returns them best first (ties broken alphabetically). This is what
// cmd/startwords runs; the result ships as StartWords.
func RankStartWords(guesses, answers []string) ([]StartWord, error) {
	as := make([]string, len(answers))
	for i, a := range answers {
		n, err := normalize(a)
		if err != nil {
			return nil, fmt.Errorf("wordle: answer %d: %w", i, err)
		}
		as[i] = n
	}
	out := make([]StartWord, len(guesses))
	var counts [NumCodes]int
	for i, g := range guesses {
		n, err := normalize(g)
		if err != nil {
			return nil, fmt.Errorf("wordle: guess %d: %w", i, err)
		}
		out[i] = StartWord{Word: n, Bits: entropy(n, as, &counts)}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Bits != out[j].Bits {
			return out[i].Bits > out[j].Bits
		}
		return out[i].Word < out[j].Word
	})
	return out, nil
}
