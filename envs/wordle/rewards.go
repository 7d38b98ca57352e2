package wordle

import (
	"strings"

	"github.com/grpokit/grpokit/reward"
)

// Breakdown is the reward of one move, by component, each in [0, 1] except
// Win (up to 1.5).
type Breakdown struct {
	// Format is 1 when the reply is <think>…</think><guess>…</guess> and
	// nothing else.
	Format float64
	// Valid is 1 when the guess is an allowed five-letter word.
	Valid float64
	// Consistent is 1 when a valid guess could still be the answer given
	// all feedback so far (always 1 for a valid first guess).
	Consistent float64
	// Partial is (greens + yellows/2) / 5 of the guess's feedback.
	Partial float64
	// Win is 1 + 0.1 × (MaxTurns − n) when guess number n wins (1.5 for a
	// first-guess win, 1.0 on the sixth), else 0.
	Win float64
	// Fit is graded consistency: the share of the earlier feedback the
	// guess agrees with. For every earlier valid turn and letter position
	// it asks whether the guess, were it the answer, would have produced
	// that turn's colour there. It is 1 exactly when the guess is
	// Consistent, and unlike Consistent it depends on the board alone (not
	// on the secret) while still telling a near miss from a guess that
	// ignores the feedback: a dense signal for learning consistency.
	Fit float64
}

// Weights turns a Breakdown into one number. See DefaultWeights.
type Weights struct {
	Format, Valid, Consistent, Partial, Win, Fit float64
}

// DefaultWeights are Format 0.2, Valid 0.2, Consistent 0.5, Partial 0.5,
// Win 1, Fit 0: a winning move scores up to 2.9, a well-formed valid
// consistent guess with no hits 0.9.
func DefaultWeights() Weights {
	return Weights{Format: 0.2, Valid: 0.2, Consistent: 0.5, Partial: 0.5, Win: 1}
}

// Total returns the weighted sum of b.
func (b Breakdown) Total(w Weights) float64 {
	return w.Format*b.Format + w.Valid*b.Valid + w.Consistent*b.Consistent + w.Partial*b.Partial + w.Win*b.Win + w.Fit*b.Fit
}

// ScoreMove scores the policy's reply as the next move of a game whose
// secret is answer and whose earlier turns are history. It returns the
// breakdown and the turn the move makes (Invalid set, with the parser's
// message, when the move is not an allowed word). answer must be a
// five-letter word.
func ScoreMove(answer string, history []Turn, reply string) (Breakdown, Turn) {
	var b Breakdown
	b.Format = formatReward("", reply, "")
	guess, err := ParseGuess(reply)
	if err != nil {
		bad, _ := reward.TagContent(reply, "guess")
		return b, Turn{Guess: bad, Invalid: strings.TrimPrefix(err.Error(), "wordle: ")}
	}
	a, err := normalize(answer)
	if err != nil {
		return b, Turn{Guess: guess, Invalid: "the game has no valid answer"}
	}
	fb := score(guess, a)
	b.Valid = 1
	b.Consistent = 1
	agree, colours := 0, 0
	for _, t := range history {
		if t.Invalid != "" {
			continue
		}
		fb := score(t.Guess, guess)
		if fb != t.Feedback {
			b.Consistent = 0
		}
		for i := range fb {
			if fb[i] == t.Feedback[i] {
				agree++
			}
		}
		colours += WordLen
	}
	b.Fit = 1
	if colours > 0 {
		b.Fit = float64(agree) / float64(colours)
	}
	hits := 0 // two per green, one per yellow
	for _, c := range fb {
		hits += int(c)
	}
	b.Partial = float64(hits) / 10
	if fb.Won() {
		n := len(history) + 1
		b.Win = 1 + 0.1*float64(MaxTurns-n)
	}
	return b, Turn{Guess: guess, Feedback: fb}
}

// MetaGuesses is the Sample.Meta key that holds a state's earlier guesses,
// comma-separated ("crane,sloth"), for the single-turn Rewards.
const MetaGuesses = "wordle_guesses"

// HistoryFor replays earlier guesses against answer. It fails when answer
// or a guess is not an allowed word.
func HistoryFor(answer string, earlier []string) ([]Turn, error) {
	a, err := ParseWord(answer)
	if err != nil {
		return nil, err
	}
	h := make([]Turn, 0, len(earlier))
	for _, g := range earlier {
		w, err := ParseWord(g)
		if err != nil {
			return nil, err
		}
		h = append(h, Turn{Guess: w, Feedback: score(w, a)})
	}
	return h, nil
}

// Rewards returns the move rewards as named, weighted Scorers for a
// reward.Evaluator, for training on single states: Sample.Answer is the
// secret word and Sample.Meta[MetaGuesses] the earlier guesses. Names:
// "format", "valid", "consistent", "partial", "win", "fit". A sample whose answer
// or history is invalid scores 0 on all of them.
func Rewards(w Weights) []reward.Named {
	pick := func(f func(Breakdown) float64) reward.Scorer {
		return reward.ScorerFunc(func(s reward.Sample) float64 {
			var earlier []string
			if g := s.Meta[MetaGuesses]; g != "" {
				earlier = strings.Split(g, ",")
			}
			h, err := HistoryFor(s.Answer, earlier)
			if err != nil {
				return 0
			}
			b, _ := ScoreMove(s.Answer, h, s.Completion)
			return f(b)
		})
	}
	return []reward.Named{
		{Name: "format", Weight: w.Format, Scorer: pick(func(b Breakdown) float64 { return b.Format })},
		{Name: "valid", Weight: w.Valid, Scorer: pick(func(b Breakdown) float64 { return b.Valid })},
		{Name: "consistent", Weight: w.Consistent, Scorer: pick(func(b Breakdown) float64 { return b.Consistent })},
		{Name: "partial", Weight: w.Partial, Scorer: pick(func(b Breakdown) float64 { return b.Partial })},
		{Name: "win", Weight: w.Win, Scorer: pick(func(b Breakdown) float64 { return b.Win })},
		{Name: "fit", Weight: w.Fit, Scorer: pick(func(b Breakdown) float64 { return b.Fit })},
	}
}
