package main

import (
	"context"
	"fmt"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/envs/wordle"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/exkit"
)

// statePool is GRPO's single-move data in the "states" mode: the boards
// that the policy itself meets when it plays greedily, which is how it is
// evaluated. Every refresh it plays greedy games for the next answers of
// its list and keeps each board after the first guess (the first move
// always ties: every word is consistent on the empty board); the trainer
// samples G replies to each board and scores them with the move rewards.
// Those boards are where greedy play goes wrong (an ignored yellow, a
// guess repeated turn after turn), so GRPO trains where it can help, on
// answers the warm start never saw.
//
// The pool changes with the policy, so Example(i) is not the same example
// for the same i across a resume: a resumed run does not replay the same
// data (the Dataset contract's exactness does not hold for this mode).
type statePool struct {
	answers []string
	games   int // games per refresh
	next    int // next answer to play
	p       prompter
	maxNew  int
	size    int
	states  []dataset.Example
	// Wins and Played count the pool's greedy games: a running measure of
	// greedy play on the training answers.
	Wins, Played int
}

func (s *statePool) Len() int { return s.size }

func (s *statePool) Example(i int) (dataset.Example, error) {
	if len(s.states) == 0 {
		return dataset.Example{}, fmt.Errorf("wordle: state pool is empty")
	}
	return s.states[i%len(s.states)], nil
}

// refresh replaces the pool with the boards of greedy games of the next
// s.games answers.
func (s *statePool) refresh(ctx context.Context, pol grpo.Policy) error {
	words := make([]string, s.games)
	for i := range words {
		words[i] = s.answers[s.next%len(s.answers)]
		s.next++
	}
	games := make([]*wordle.Game, len(words))
	for i, w := range words {
		games[i] = wordle.NewGame()
		if err := games[i].Reset(w, nil); err != nil {
			return err
		}
	}
	var states []dataset.Example
	for turn := 0; turn < wordle.MaxTurns; turn++ {
		var active []*wordle.Game
		var exs []dataset.Example
		for _, g := range games {
			if !g.Done() {
				active = append(active, g)
				exs = append(exs, s.p.example(g))
			}
		}
		if len(active) == 0 {
			break
		}
		if turn > 0 {
			states = append(states, exs...)
		}
		replies, err := exkit.Greedy(ctx, pol, exs, s.maxNew, 64, nil)
		if err != nil {
			return fmt.Errorf("wordle: state pool: %w", err)
		}
		for i, g := range active {
			if _, err := g.Step(replies[i]); err != nil {
				return fmt.Errorf("wordle: state pool: %w", err)
			}
		}
	}
	for _, g := range games {
		s.Played++
		if g.Won() {
			s.Wins++
		}
	}
	if len(states) > 0 {
		s.states = states
	}
	return nil
}
