package main

import (
	"math"
	"strings"

	"github.com/grpokit/grpokit/envs/wordle"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/tokenizer"
)

// letterScorer is the per-letter credit of a move as a grpo.TokenScorer:
// wordle.LetterTokenCredit on the text of each completion token. A token's
// text is what it adds to the decoded prefix (so that tokens which only
// decode in context still join to the whole); special tokens decode to
// their own text, and the sample's completion is taken as the joined
// pieces, which ParseGuess reads the same way.
type letterScorer struct{ tok *tokenizer.Tokenizer }

func (l letterScorer) ScoreTokens(s reward.Sample, ids []int32) ([]float64, error) {
	pieces := make([]string, len(ids))
	prefix := make([]int, 0, len(ids))
	prev := ""
	for i, id := range ids {
		prefix = append(prefix, int(id))
		text := l.tok.Decode(prefix, false)
		if !strings.HasPrefix(text, prev) {
			return unscored(len(ids)), nil // a decoder that rewrote the prefix: no offsets to trust
		}
		pieces[i], prev = text[len(prev):], text
	}
	s.Completion = strings.Join(pieces, "")
	return wordle.LetterTokenCredit(s, pieces)
}

// unscored is n NaNs: no token scored.
func unscored(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

// letterCredit returns the trainer's token credit of weight w.
func letterCredit(tok *tokenizer.Tokenizer, w float64) grpo.TokenCredit {
	return grpo.TokenCredit{Name: "letters", Weight: w, Scorer: letterScorer{tok: tok}}
}
