package wordle

import (
	"math/rand/v2"
	"strings"

	"github.com/grpokit/grpokit/reward"
)

// State is a starting position: a secret and the guesses already made.
type State struct {
	Answer  string
	Earlier []string // 0 to 4 guesses, each consistent with the feedback before it
}

// History replays the earlier guesses against the answer.
func (s State) History() []Turn {
	h := make([]Turn, len(s.Earlier))
	for i, g := range s.Earlier {
		h[i] = Turn{Guess: g, Feedback: score(g, s.Answer)}
	}
	return h
}

// Prompt renders the state for the policy's next move.
func (s State) Prompt() string { return RenderPrompt(s.History()) }

// Meta returns the Sample.Meta that Rewards reads for this state.
func (s State) Meta() map[string]string {
	return map[string]string{MetaGuesses: strings.Join(s.Earlier, ",")}
}

// Sample returns the reward.Sample of a reply to this state.
func (s State) Sample(reply string) reward.Sample {
	return reward.Sample{Prompt: s.Prompt(), Completion: reply, Answer: s.Answer, Turn: len(s.Earlier), Meta: s.Meta()}
}

// StateSampler draws synthetic starting states, deterministically from a
// seed: an answer from its list and 0 to 4 earlier guesses (equally likely),
// each drawn from the full answer list among the words consistent with
// all feedback so far (a hard-mode player), never the answer itself.
// Fewer guesses are made when no other consistent word is left. A
// StateSampler is not safe for concurrent use.
type StateSampler struct {
	rng     *rand.Rand
	answers []string
	pool    []string
}

// NewStateSampler returns a sampler whose secrets come from answers (for
// example the train half of SplitAnswers). Words are lower-cased; words
// that are not five letters are dropped.
func NewStateSampler(seed uint64, answers []string) *StateSampler {
	s := &StateSampler{rng: rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d)), pool: lists().answers}
	for _, a := range answers {
		if n, err := normalize(a); err == nil {
			s.answers = append(s.answers, n)
		}
	}
	return s
}

// Next returns the next state. It returns the zero State when the sampler
// has no answers.
func (s *StateSampler) Next() State {
	if len(s.answers) == 0 {
		return State{}
	}
	answer := s.answers[s.rng.IntN(len(s.answers))]
	return State{Answer: answer, Earlier: s.Earlier(answer, s.rng.IntN(5))}
}

// Earlier draws up to k earlier guesses for answer (see StateSampler).
func (s *StateSampler) Earlier(answer string, k int) []string {
	var out []string
	var hist []Turn
	cands := make([]string, 0, len(s.pool))
	for len(out) < k {
		cands = cands[:0]
		for _, w := range s.pool {
			if w == answer {
				continue
			}
			ok := true
			for _, t := range hist {
				if score(t.Guess, w) != t.Feedback {
					ok = false
					break
				}
			}
			if ok {
				cands = append(cands, w)
			}
		}
		if len(cands) == 0 {
			break
		}
		g := cands[s.rng.IntN(len(cands))]
		out = append(out, g)
		hist = append(hist, Turn{Guess: g, Feedback: score(g, answer)})
	}
	return out
}
