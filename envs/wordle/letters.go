package wordle

import (
	"errors"
	"math"
	"strings"
	"unicode"

	"github.com/grpokit/grpokit/reward"
)

// LetterCredit scores each letter of guess against what the earlier turns
// of history say about its position: 1 when the letter may stand there, 0
// when the board rules it out. Letter i is ruled out when
//
//   - position i is known green with another letter;
//   - an earlier guess had this letter at position i and it was not green
//     there (gray or yellow: the answer's letter i is another one);
//   - the board caps the letter's count (a gray copy of it: the answer has
//     exactly as many as that guess's green and yellow copies, none for a
//     letter known absent) and this copy is over the cap: copies at
//     positions known green for the letter are kept first, then from the
//     left.
//
// A guess consistent with all the feedback (it could be the answer)
// scores 1 on every letter; a repeated losing guess scores 0 on every
// letter that was not green. What is not about one position — a yellow
// letter that the guess leaves out, a letter seen fewer times than the
// board requires — is left to the word-level rewards (Consistent, Fit).
// Invalid turns in history are skipped. guess must be five letters.
func LetterCredit(history []Turn, guess string) ([WordLen]float64, error) {
	var credit [WordLen]float64
	g, err := normalize(guess)
	if err != nil {
		return credit, err
	}
	var greenAt [WordLen]byte
	var notAt [WordLen][26]bool
	maxCount := map[byte]int{}
	for _, t := range history {
		if t.Invalid != "" {
			continue
		}
		w, err := normalize(t.Guess)
		if err != nil {
			return credit, err
		}
		colored := map[byte]int{}
		for i := 0; i < WordLen; i++ {
			if t.Feedback[i] == Green {
				greenAt[i] = w[i]
			} else {
				notAt[i][w[i]-'a'] = true
			}
			if t.Feedback[i] != Gray {
				colored[w[i]]++
			}
		}
		for i := 0; i < WordLen; i++ {
			if t.Feedback[i] == Gray {
				c := w[i]
				if m, ok := maxCount[c]; !ok || colored[c] < m {
					maxCount[c] = colored[c]
				}
			}
		}
	}
	for i := 0; i < WordLen; i++ {
		c := g[i]
		credit[i] = 1
		if greenAt[i] != 0 && greenAt[i] != c || notAt[i][c-'a'] {
			credit[i] = 0
		}
	}
	for c, limit := range maxCount {
		kept := 0
		for i := 0; i < WordLen; i++ { // green-known copies first
			if g[i] == c && greenAt[i] == c {
				kept++
			}
		}
		for i := 0; i < WordLen; i++ {
			if g[i] != c || greenAt[i] == c {
				continue
			}
			if kept < limit {
				kept++
			} else {
				credit[i] = 0
			}
		}
	}
	return credit, nil
}

// LetterTokenCredit maps LetterCredit onto the tokens of a move, for
// token-level credit in GRPO (grpo.TokenScorer): s is the move's sample
// (Sample.Answer the secret, Sample.Meta[MetaGuesses] the earlier guesses,
// as Rewards reads them) and pieces the text of each completion token, in
// order (they must join to s.Completion). A token that spells one or more
// letters of the guess gets the smallest credit among them; every other
// token, and every token of a move that is not a valid guess, gets NaN
// (not scored). It fails when the pieces do not join to the completion or
// the sample's answer or history is invalid.
func LetterTokenCredit(s reward.Sample, pieces []string) ([]float64, error) {
	if strings.Join(pieces, "") != s.Completion {
		return nil, errors.New("wordle: letter credit: the token pieces do not join to the completion")
	}
	out := make([]float64, len(pieces))
	for i := range out {
		out[i] = math.NaN()
	}
	var earlier []string
	if g := s.Meta[MetaGuesses]; g != "" {
		earlier = strings.Split(g, ",")
	}
	h, err := HistoryFor(s.Answer, earlier)
	if err != nil {
		return nil, err
	}
	guess, err := ParseGuess(s.Completion)
	if err != nil {
		return out, nil // not a valid move: the word-level rewards say so
	}
	credit, err := LetterCredit(h, guess)
	if err != nil {
		return nil, err
	}
	// The guess's letters sit inside the last <guess>…</guess> (as
	// reward.TagContent reads it), after any leading white space.
	open := strings.LastIndex(s.Completion, "<guess>") + len("<guess>")
	rest := s.Completion[open:]
	start := open + len(rest) - len(strings.TrimLeftFunc(rest, unicode.IsSpace))
	pos := 0
	for k, p := range pieces {
		for j := pos; j < pos+len(p); j++ {
			if l := j - start; l >= 0 && l < WordLen {
				if math.IsNaN(out[k]) || credit[l] < out[k] {
					out[k] = credit[l]
				}
			}
		}
		pos += len(p)
	}
	return out, nil
}
