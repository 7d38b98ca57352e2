package wordle

import (
	"fmt"
	"math/rand/v2"
)

// Move is one supervised training example: a position (the secret and the
// turns so far) and the solver's guess from there.
type Move struct {
	Answer  string
	History []Turn // the turns before the move, oldest first
	Guess   string // the solver's guess, consistent with History
}

// Reply is the move in the policy's reply format, with an empty think
// block: "<think>\n</think>\n<guess>crane</guess>".
func (m Move) Reply() string { return "<think>\n</think>\n<guess>" + m.Guess + "</guess>" }

// GameGenerator draws training games played by a Solver, deterministically
// from a seed: a secret from its answers and a start with 0 to maxEarlier
// earlier guesses (equally likely) drawn by a StateSampler (the seed's
// synthetic mid-game states: random hard-mode guesses), from which the
// solver plays to the end. 0 earlier guesses is a whole game from the empty
// board. Every solver move of the game is a Move. A GameGenerator is not
// safe for concurrent use.
type GameGenerator struct {
	solver     *Solver
	states     *StateSampler
	rng        *rand.Rand
	answers    []string
	maxEarlier int
}

// NewGameGenerator returns a generator of games whose secrets come from
// answers (for example the train half of SplitAnswers), played by solver,
// starting with up to maxEarlier (0 to 4) earlier guesses.
func NewGameGenerator(seed uint64, answers []string, solver *Solver, maxEarlier int) (*GameGenerator, error) {
	if maxEarlier < 0 || maxEarlier > 4 {
		return nil, fmt.Errorf("wordle: game generator: maxEarlier %d: want 0 to 4", maxEarlier)
	}
	if solver == nil {
		return nil, fmt.Errorf("wordle: game generator: nil solver")
	}
	g := &GameGenerator{
		solver: solver, states: NewStateSampler(seed, answers),
		rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), maxEarlier: maxEarlier,
	}
	g.answers = g.states.answers
	if len(g.answers) == 0 {
		return nil, fmt.Errorf("wordle: game generator: no answers")
	}
	return g, nil
}

// Game draws the next game and returns the solver's moves in it, in order.
// The earlier guesses of a mid-game start are History of the first move.
func (g *GameGenerator) Game() ([]Move, error) {
	answer := g.answers[g.rng.IntN(len(g.answers))]
	earlier := g.states.Earlier(answer, g.rng.IntN(g.maxEarlier+1))
	h, err := HistoryFor(answer, earlier)
	if err != nil {
		return nil, err
	}
	made, _, err := g.solver.Play(answer, earlier)
	if err != nil {
		return nil, err
	}
	moves := make([]Move, len(made))
	for i, t := range made {
		moves[i] = Move{Answer: answer, History: h[:len(h):len(h)], Guess: t.Guess}
		h = append(h, t)
	}
	return moves, nil
}

// Moves draws games until it has at least n moves and returns them.
func (g *GameGenerator) Moves(n int) ([]Move, error) {
	var out []Move
	for len(out) < n {
		ms, err := g.Game()
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}
