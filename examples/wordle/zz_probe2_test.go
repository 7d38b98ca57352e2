package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/envs/wordle"
	"github.com/grpokit/grpokit/examples/internal/exkit"
	"github.com/grpokit/grpokit/grpo"
)

func TestProbeEval(t *testing.T) {
	dirs := os.Getenv("PROBE_DIRS")
	if dirs == "" {
		t.Skip()
	}
	for _, dir := range strings.Split(dirs, ",") {
		cfg := defaults()
		cfg.Out = t.TempDir()
		s, err := exkit.Load("wordle", &cfg.Config, tinyModel(64, 2))
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := loadWarm(s.Model, dir); !ok || err != nil {
			t.Fatal(ok, err)
		}
		trie, _, _ := replyTrie(s)
		pol, err := s.Policy(&cfg.Config, trie)
		if err != nil {
			t.Fatal(err)
		}
		_, test := wordle.SplitAnswers(1, 200)
		train, _ := wordle.SplitAnswers(1, 200)
		for _, set := range []struct {
			name  string
			words []string
		}{{"held", test[:100]}, {"train", train[:100]}} {
			for _, temp := range []float64{0, 0.5, 1} {
				r := evalT(t, pol, set.words, temp)
				fmt.Printf("%s %s T=%v: %s\n", dir, set.name, temp, r.line())
			}
		}
	}
}

func evalT(t *testing.T, pol grpo.Policy, words []string, temp float64) evalReport {
	var r evalReport
	p := prompter{tiny: true}
	games := make([]*wordle.Game, len(words))
	for i, w := range words {
		games[i] = wordle.NewGame()
		games[i].Reset(w, nil)
	}
	for turn := 0; turn < wordle.MaxTurns; turn++ {
		var active []*wordle.Game
		var exs []grpo.Example
		for _, g := range games {
			if !g.Done() {
				active = append(active, g)
				exs = append(exs, p.example(g))
			}
		}
		if len(active) == 0 {
			break
		}
		res, err := grpo.Evaluate(context.Background(), pol, grpo.SliceDataset(exs), nil, grpo.EvalOptions{MaxCompletionLength: 24, BatchSize: 64, Temperature: temp, Seed: uint64(turn + 1)})
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range active {
			h := g.History()
			res, _ := g.Step(res.Completions[i])
			r.Moves++
			for _, t := range h {
				if t.Guess == res.Turn.Guess {
					r.Repeats++
					break
				}
			}
			r.Consistent += res.Breakdown.Consistent
		}
	}
	r.Games = len(games)
	for _, g := range games {
		if g.Won() {
			r.Wins++
			r.WinTurns += len(g.History())
		}
	}
	r.WinRate = float64(r.Wins) / float64(r.Games)
	r.MeanTurns = float64(r.WinTurns) / float64(max(1, r.Wins))
	r.ConsistentRate = r.Consistent / float64(r.Moves)
	return r
}
