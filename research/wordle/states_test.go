package main

import (
	"context"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/envs/wordle"
)

func TestStatePool(t *testing.T) {
	ctx := context.Background()
	// A player stuck on CRANE never wins: each game gives the boards
	// after guesses 1 to 5, and the pool's second refresh plays the next
	// answers of its list.
	pool := &statePool{answers: []string{"cigar", "hatch", "robot"}, games: 2, p: prompter{tiny: true, board: "grid"}, maxNew: 24, size: 100}
	if _, err := pool.Example(0); err == nil {
		t.Error("Example on an empty pool: want an error")
	}
	stuck := solverPolicy{reply: reply("crane")}
	if err := pool.refresh(ctx, stuck); err != nil {
		t.Fatal(err)
	}
	if len(pool.states) != 10 || pool.Wins != 0 || pool.Played != 2 || pool.Len() != 100 {
		t.Fatalf("stuck player: %d boards, %d/%d wins; want 10 boards, 0/2", len(pool.states), pool.Wins, pool.Played)
	}
	for i, ex := range pool.states {
		answer := []string{"cigar", "hatch"}[i%2]
		guesses := strings.Repeat("crane,", i/2+1)
		if ex.Answer != answer || ex.Meta[wordle.MetaGuesses] != strings.TrimSuffix(guesses, ",") {
			t.Errorf("board %d: answer %q, guesses %q; want %q after %d CRANEs", i, ex.Answer, ex.Meta[wordle.MetaGuesses], answer, i/2+1)
		}
	}
	// CRANE vs CIGAR: C green, R and A yellow; the grid of the board after one CRANE.
	if want := "TWO Xe Xn Pa Pc Pr BA YrB YaC BD BE GcA UB UC UD UE GUESS\n"; pool.states[0].Prompt != want {
		t.Errorf("first board %q, want %q", pool.states[0].Prompt, want)
	}
	if ex, err := pool.Example(13); err != nil || ex.Prompt != pool.states[3].Prompt {
		t.Errorf("Example(13) = %q, %v; want board 3 (13 mod 10)", ex.Prompt, err)
	}
	// The solver wins ROBOT and CIGAR (the list wraps around); its boards
	// are those before each of its guesses but the first.
	s, err := wordle.NewSolver(wordle.Answers())
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.refresh(ctx, solverPolicy{s: s}); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, w := range []string{"robot", "cigar"} {
		made, won, err := s.Play(w, nil)
		if err != nil || !won {
			t.Fatalf("solver on %s: won %v, %v", w, won, err)
		}
		want += len(made) - 1
	}
	if len(pool.states) != want || pool.states[0].Answer != "robot" || pool.Wins != 2 || pool.Played != 4 {
		t.Errorf("solver: %d boards (want %d), first answer %q, wins %d/%d; want robot, 2/4", len(pool.states), want, pool.states[0].Answer, pool.Wins, pool.Played)
	}
	var _ dataset.Dataset = pool
}
