package wordle

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestGame(t *testing.T) {
	g := NewGame()
	if _, err := g.Step("x"); err == nil || !strings.Contains(err.Error(), "Step before Reset") {
		t.Fatalf("Step before Reset: %v", err)
	}
	if err := g.Reset("CIGAR", []string{"crane"}); err != nil {
		t.Fatal(err)
	}
	wantPrompt := Instructions + "\n\n" +
		"Guess 1: CRANE → C is in position 1; R is in the word but not in position 2; A is in the word but not in position 3; N is not in the word; E is not in the word.\n" +
		"Make guess 2 of 6."
	if got := g.Prompt(); got != wantPrompt {
		t.Errorf("Prompt =\n%s\nwant\n%s", got, wantPrompt)
	}
	res, err := g.Step("<think>hmm</think><guess>qwert</guess>")
	if err != nil || res.Done || res.Turn.Invalid == "" || math.Abs(res.Reward-0.2) > 1e-9 {
		t.Fatalf("invalid move: %+v, %v", res, err)
	}
	if !strings.Contains(g.Prompt(), "Guess 2: not accepted (") || !strings.HasSuffix(g.Prompt(), "Make guess 3 of 6.") {
		t.Errorf("prompt after invalid move:\n%s", g.Prompt())
	}
	res, err = g.Step("<think>C first</think><guess>cobra</guess>")
	if err != nil || res.Done || res.Turn.Feedback.String() != "G..YY" || math.Abs(res.Reward-1.1) > 1e-9 {
		t.Fatalf("cobra: %+v, %v", res, err)
	}
	// Guess 4 wins: bonus 1 + 0.1×2.
	res, err = g.Step("<think>got it</think><guess>cigar</guess>")
	if err != nil || !res.Done || !res.Won || math.Abs(res.Breakdown.Win-1.2) > 1e-9 || math.Abs(res.Reward-2.6) > 1e-9 {
		t.Fatalf("win: %+v, %v", res, err)
	}
	if g.Given() != 1 || len(g.History()) != 4 || !g.Won() || g.Answer() != "cigar" {
		t.Errorf("state: given %d, history %v", g.Given(), g.History())
	}
	if _, err := g.Step("x"); err == nil || !strings.Contains(err.Error(), "after the game ended") {
		t.Errorf("Step after end: %v", err)
	}
}

func TestGameLoses(t *testing.T) {
	g := NewGame()
	if err := g.Reset("cigar", nil); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= MaxTurns; i++ {
		res, err := g.Step("<think>t</think><guess>crane</guess>")
		if err != nil || res.Won || res.Done != (i == MaxTurns) {
			t.Fatalf("move %d: %+v, %v", i, res, err)
		}
	}
	if !g.Done() || g.Won() {
		t.Error("game should be lost")
	}
}

func TestGameResetErrors(t *testing.T) {
	g := NewGame()
	tests := []struct {
		answer  string
		earlier []string
		err     string
	}{
		{"xyzzy", nil, `wordle: reset: wordle: not an allowed word: "xyzzy"`},
		{"cigar", []string{"crane", "cigar"}, `wordle: reset: earlier guess 2 is the answer "cigar"`},
		{"cigar", []string{"crane", "toast", "qwert"}, `wordle: reset: wordle: not an allowed word: "qwert"`},
		{"cigar", []string{"a", "b", "c", "d", "e", "f"}, "wordle: reset: 6 earlier guesses, want at most 5"},
	}
	for _, tc := range tests {
		if err := g.Reset(tc.answer, tc.earlier); err == nil || err.Error() != tc.err {
			t.Errorf("Reset(%q, %v) = %v, want %q", tc.answer, tc.earlier, err, tc.err)
		}
	}
}

func TestEvaluate(t *testing.T) {
	always := func(w string) Player {
		return func(string) (string, error) { return "<think>t</think><guess>" + w + "</guess>", nil }
	}
	rep, err := Evaluate(context.Background(), always("cigar"), []string{"cigar", "rebut"})
	if err != nil {
		t.Fatal(err)
	}
	// Game 1 won on guess 1; game 2 lost after 6 moves.
	if rep.Games != 2 || rep.Wins != 1 || rep.WinRate != 0.5 || rep.MeanTurns != 1 || rep.WinsAt[1] != 1 || rep.Moves != 7 || rep.Invalid != 0 {
		t.Errorf("report = %+v", rep)
	}
	if got := rep.String(); !strings.HasPrefix(got, "wordle: 2 games, win rate 50.0%, mean turns 1.00, invalid moves 0/7\nwins by guess: 1:1 2:0") {
		t.Errorf("String = %q", got)
	}
	rep, err = Evaluate(context.Background(), always("zzzzz"), []string{"cigar"})
	if err != nil || rep.Invalid != 6 || rep.Wins != 0 || rep.MeanTurns != 0 {
		t.Errorf("invalid player: %+v, %v", rep, err)
	}
	boom := errors.New("boom")
	_, err = Evaluate(context.Background(), func(string) (string, error) { return "", boom }, []string{"cigar"})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "game 0 (cigar)") {
		t.Errorf("player error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Evaluate(ctx, always("cigar"), []string{"cigar"}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}
