package wordle

import (
	"errors"
	"fmt"
)

// errGame reports misuse of a Game (Step before Reset or after the end).
var errGame = errors.New("wordle: game")

// MaxTurns is the number of guesses a game allows.
const MaxTurns = 6

// Game is one game of Wordle played by the policy, possibly from a state
// with earlier guesses already made. Use it as a multi-turn environment:
// Reset, then Prompt and Step until Done. An invalid move (no <guess>
// block, not five letters, unknown word) uses up its turn and scores only
// its Format component. A Game is not safe for concurrent use.
type Game struct {
	// Weights combine each move's Breakdown into StepResult.Reward.
	// NewGame sets DefaultWeights.
	Weights Weights

	answer  string
	history []Turn
	given   int // how many turns of history came with Reset
	won     bool
	ready   bool
}

// NewGame returns a Game with DefaultWeights; call Reset before Step.
func NewGame() *Game { return &Game{Weights: DefaultWeights()} }

// Reset starts a game with the secret answer after the earlier guesses
// (0 to MaxTurns-1 allowed words, none equal to the answer: the state must
// not be won already).
func (g *Game) Reset(answer string, earlier []string) error {
	if len(earlier) >= MaxTurns {
		return fmt.Errorf("wordle: reset: %d earlier guesses, want at most %d", len(earlier), MaxTurns-1)
	}
	h, err := HistoryFor(answer, earlier)
	if err != nil {
		return fmt.Errorf("wordle: reset: %w", err)
	}
	for i, t := range h {
		if t.Feedback.Won() {
			return fmt.Errorf("wordle: reset: earlier guess %d is the answer %q", i+1, t.Guess)
		}
	}
	a, _ := normalize(answer)
	*g = Game{Weights: g.Weights, answer: a, history: h, given: len(h), ready: true}
	return nil
}

// Prompt returns the text for the policy's next move (see RenderPrompt).
func (g *Game) Prompt() string { return RenderPrompt(g.history) }

// StepResult is what one move did.
type StepResult struct {
	Turn      Turn      // the move as scored; Turn.Invalid says why a move was rejected
	Message   string    // the feedback in plain English, as the next prompt shows it
	Breakdown Breakdown // the move's reward components
	Reward    float64   // Breakdown.Total(Weights)
	Done      bool      // the game is over: won, or no turns left
	Won       bool
}

// Step plays the policy's reply as the next move. It returns an error only
// when the game was not Reset or is already over; a bad move is a lost turn,
// reported in the result.
func (g *Game) Step(reply string) (StepResult, error) {
	if !g.ready {
		return StepResult{}, fmt.Errorf("%w: Step before Reset", errGame)
	}
	if g.Done() {
		return StepResult{}, fmt.Errorf("%w: Step after the game ended", errGame)
	}
	b, t := ScoreMove(g.answer, g.history, reply)
	g.history = append(g.history, t)
	g.won = t.Invalid == "" && t.Feedback.Won()
	return StepResult{
		Turn:      t,
		Message:   Describe(t),
		Breakdown: b,
		Reward:    b.Total(g.Weights),
		Done:      g.Done(),
		Won:       g.won,
	}, nil
}

// Done reports whether the game is over.
func (g *Game) Done() bool { return g.won || len(g.history) >= MaxTurns }

// Won reports whether the last move found the answer.
func (g *Game) Won() bool { return g.won }

// Answer returns the secret word.
func (g *Game) Answer() string { return g.answer }

// History returns the turns so far, earlier (given) ones first.
func (g *Game) History() []Turn { return append([]Turn(nil), g.history...) }

// Given returns how many turns came with Reset rather than from Step.
func (g *Game) Given() int { return g.given }
