package wordle

import (
	"context"
	"fmt"
	"strings"
)

// Player is the policy under evaluation: it answers a prompt with its
// reply text (which should hold <think>…</think><guess>…</guess>).
type Player func(prompt string) (string, error)

// EvalReport summarizes full games played from the empty board.
type EvalReport struct {
	Games   int
	Wins    int
	WinRate float64 // Wins / Games
	// MeanTurns is the mean number of guesses over won games (0 if none).
	MeanTurns float64
	// WinsAt[n] counts games won on guess n (1..MaxTurns); WinsAt[0] is unused.
	WinsAt [MaxTurns + 1]int
	// Invalid counts moves that were rejected (bad format or unknown word).
	Invalid int
	Moves   int // all moves played
}

// Evaluate plays one game per answer (for example the held-out half of
// SplitAnswers) with player and reports the win rate and mean turns. It
// stops with an error when the player fails, naming the game, or when ctx
// ends (context.Cause).
func Evaluate(ctx context.Context, player Player, answers []string) (EvalReport, error) {
	var rep EvalReport
	g := NewGame()
	turns := 0
	for i, a := range answers {
		if err := g.Reset(a, nil); err != nil {
			return rep, fmt.Errorf("wordle: evaluate game %d: %w", i, err)
		}
		for !g.Done() {
			if err := context.Cause(ctx); err != nil {
				return rep, fmt.Errorf("wordle: evaluate: %w", err)
			}
			reply, err := player(g.Prompt())
			if err != nil {
				return rep, fmt.Errorf("wordle: evaluate game %d (%s): player: %w", i, a, err)
			}
			res, err := g.Step(reply)
			if err != nil {
				return rep, err
			}
			rep.Moves++
			if res.Turn.Invalid != "" {
				rep.Invalid++
			}
		}
		rep.Games++
		if g.Won() {
			n := len(g.History())
			rep.Wins++
			rep.WinsAt[n]++
			turns += n
		}
	}
	if rep.Games > 0 {
		rep.WinRate = float64(rep.Wins) / float64(rep.Games)
	}
	if rep.Wins > 0 {
		rep.MeanTurns = float64(turns) / float64(rep.Wins)
	}
	return rep, nil
}

// String renders the report on two lines.
func (r EvalReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "wordle: %d games, win rate %.1f%%, mean turns %.2f, invalid moves %d/%d\n",
		r.Games, 100*r.WinRate, r.MeanTurns, r.Invalid, r.Moves)
	b.WriteString("wins by guess:")
	for n := 1; n <= MaxTurns; n++ {
		fmt.Fprintf(&b, " %d:%d", n, r.WinsAt[n])
	}
	b.WriteString("\n")
	return b.String()
}
