package main

import (
	"math"
	"testing"

	"github.com/grpokit/grpokit/envs/wordle"
	"github.com/grpokit/grpokit/internal/exkit"
	"github.com/grpokit/grpokit/reward"
)

// TestLetterScorer checks the per-letter credit on the tiny tokenizer's
// tokens of a move: CRATE after CRANE against SLATE (C and R absent) scores
// 0 on the C and R tokens, 1 on A, T and E, and leaves the format tokens
// (including the letters of the "</guess>" tag and EOS) unscored.
func TestLetterScorer(t *testing.T) {
	cfg := defaults()
	cfg.Out = t.TempDir()
	s, err := exkit.Load("wordle", &cfg.Config, tinyModel(8, 1))
	if err != nil {
		t.Fatal(err)
	}
	ids := append(s.Encode(reply("crate")), s.Tok.EOS[0])
	ids32 := make([]int32, len(ids))
	for i, id := range ids {
		ids32[i] = int32(id)
	}
	sample := reward.Sample{Completion: reply("crate"), Answer: "slate", Meta: map[string]string{wordle.MetaGuesses: "crane"}}
	got, err := letterScorer{tok: s.Tok.Tokenizer}.ScoreTokens(sample, ids32)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ids) {
		t.Fatalf("%d credits for %d tokens", len(got), len(ids))
	}
	start := len(s.Encode("<think>\n</think>\n<guess>"))
	want := []float64{0, 0, 1, 1, 1}
	for i, v := range got {
		switch l := i - start; {
		case l >= 0 && l < 5:
			if v != want[l] {
				t.Errorf("letter %d (token %d): credit %v, want %v", l, i, v, want[l])
			}
		case !math.IsNaN(v):
			t.Errorf("token %d (%q) is not a letter of the guess but scores %v", i, s.Tok.Tokenizer.Decode([]int{ids[i]}, false), v)
		}
	}
}
