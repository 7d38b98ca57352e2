// Command wordle shows multi-turn GRPO with grpo.Env: a tiny model learns to
// play whole games of Wordle (package envs/wordle).
//
// A model built from scratch cannot spell a guess by chance, so the run
// first imitates wordle.Solver's moves (a supervised warm start). GRPO then
// plays whole games: each game is one episode of the Env below, at every
// turn G guesses are sampled and scored by wordle.Rewards, and one of them
// moves the game on. Before and after, the model plays held-out words that
// were never a secret in training, greedily.
//
//	go run ./examples/wordle                                   # 3,000 warm-start steps, then 40 GRPO steps
//	go run ./examples/wordle -model ~/models/Qwen2.5-0.5B-Instruct -train lora -lr 1e-5 -sft-steps -1
//
// The tiny model sees the board as one token per letter (its colour, the
// letter, its position: "GcA YrB XaC …", G green, Y yellow, X gray) and
// spells its guess under a trie of the answer words, so every move is a
// word. research/wordle is the study harness with every knob, and
// docs/results/wordle.md what a longer run reaches.
package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/envs/wordle"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/exkit"
	"github.com/grpokit/grpokit/model"
)

type config struct{ exkit.Config }

// defaults are the settings of `go run ./examples/wordle`.
func defaults() config {
	return config{exkit.Config{
		Train: "full", LoRARank: 8, Steps: 40, Generations: 8, Prompts: 8, GradientCheckpointing: true,
		LR: 3e-4, Beta: 0.05, Temperature: 1, SFTSteps: 3000, Eval: 100,
		Out: filepath.Join("runs", "wordle"), Seed: 1,
	}}
}

func main() { exkit.Main(defaults(), parse, run) }

func parse(cfg *config, args []string) error {
	return exkit.Parse("wordle", cfg, &cfg.Config, nil, args)
}

// games is the Env: episode i is a whole game whose secret is
// answers[i mod len(answers)]. The same i gives the same game, which is
// what makes a resumed run exact.
type games struct {
	answers []string
	tiny    bool
}

func (e games) Episode(i int) (grpo.Episode, error) {
	g := wordle.NewGame()
	if err := g.Reset(e.answers[i%len(e.answers)], nil); err != nil {
		return nil, err
	}
	return episode{g, e.tiny}, nil
}

// episode is one game; its moves are the model's completions.
type episode struct {
	game *wordle.Game
	tiny bool
}

func (ep episode) Observe() dataset.Example { return observe(ep.game, ep.tiny) }

func (ep episode) Step(completion string) (bool, error) {
	res, err := ep.game.Step(completion)
	return res.Done, err
}

// observe is the prompt of the game's current turn, with what the rewards
// need: the secret and the earlier valid guesses.
func observe(g *wordle.Game, tiny bool) dataset.Example {
	var guesses []string
	for _, t := range g.History() {
		if t.Invalid == "" {
			guesses = append(guesses, t.Guess)
		}
	}
	ex := dataset.Example{Answer: g.Answer(), Meta: map[string]string{wordle.MetaGuesses: strings.Join(guesses, ",")}}
	if tiny {
		ex.Prompt = board(g.History())
	} else {
		ex.Messages = []dataset.Message{{Role: "user", Content: g.Prompt()}}
	}
	return ex
}

// board writes the turns so far for the tiny model, a line per turn and a
// token per letter: its colour (G green, Y yellow, X gray), the letter and
// its position A–E. The empty board is "GUESS".
func board(history []wordle.Turn) string {
	var lines []string
	for _, t := range history {
		if t.Invalid != "" {
			lines = append(lines, "INVALID")
			continue
		}
		cells := make([]string, len(t.Guess))
		for i, c := range t.Guess {
			cells[i] = fmt.Sprintf("%c%c%c", "XYG"[t.Feedback[i]], c, "ABCDE"[i])
		}
		lines = append(lines, strings.Join(cells, " "))
	}
	return strings.Join(append(lines, "GUESS"), "\n")
}

// vocabulary is the tiny model's words: every board token and the reply's
// pieces, so that a board and a reply are a few tokens each.
func vocabulary() []string {
	words := []string{"INVALID", "GUESS", "<think", "<guess", "</", ">", ">\n"}
	for _, c := range "abcdefghijklmnopqrstuvwxyz" {
		for _, pos := range "ABCDE" {
			for _, col := range "XYG" {
				words = append(words, string(col)+string(c)+string(pos))
			}
		}
	}
	return words
}

func run(ctx context.Context, cfg config) error {
	out := cfg.Output()
	if err := cfg.Validate("wordle"); err != nil {
		return err
	}
	train, held := wordle.SplitAnswers(uint64(cfg.Seed), 200)
	held = held[:min(cfg.Eval, len(held))]
	s, err := exkit.Load("wordle", &cfg.Config, exkit.Tiny{Words: vocabulary(), Hidden: 64, Layers: 2, Heads: 4, Intermediate: 256, MaxPositions: 256})
	if err != nil {
		return err
	}
	defer s.Close() // the output folder's lock, taken by Load
	// The tiny model's replies are constrained to the answer words; a real
	// checkpoint writes freely and the rewards score what it writes.
	var trie *model.Trie
	maxNew := 48
	if s.Tiny {
		var replies [][]int
		maxNew = 0
		for _, w := range wordle.Answers() {
			ids := s.Encode(wordle.Move{Guess: w}.Reply())
			replies = append(replies, ids)
			maxNew = max(maxNew, len(ids)+1) // and EOS
		}
		trie = model.NewTrie(replies, s.Tok.EOS[0])
	}
	policy, err := s.Policy(&cfg.Config, trie)
	if err != nil {
		return fmt.Errorf("wordle: %w", err)
	}

	if s.Tiny && cfg.SFTSteps > 0 && s.From == "" {
		solver, err := wordle.NewSolver(wordle.Answers())
		if err != nil {
			return err
		}
		gen, err := wordle.NewGameGenerator(uint64(cfg.Seed), train, solver, 4)
		if err != nil {
			return err
		}
		moves, err := gen.Moves(20 * cfg.SFTSteps)
		if err != nil {
			return err
		}
		pairs := make([]exkit.Pair, len(moves))
		for i, m := range moves {
			pairs[i] = exkit.Pair{Prompt: dataset.Example{Prompt: board(m.History)}, Target: m.Reply()}
		}
		fmt.Fprintf(out, "warm start: %d supervised steps on %d moves of the solver's games\n", cfg.SFTSteps, len(moves))
		if err := exkit.SFT(ctx, s, policy, pairs, cfg.SFTSteps, 32, 3e-3, cfg.Seed, progress(cfg)); err != nil {
			return fmt.Errorf("wordle: %w", err)
		}
	}

	gc := cfg.GRPO(10)
	gc.MaxPromptLength, gc.MaxCompletionLength = 256, maxNew
	trainer, err := grpo.NewTrainer(policy, gc, wordle.Rewards(wordle.Weights{Format: 0.2, Valid: 0.2, Consistent: 1, Fit: 2})...)
	if err != nil {
		return fmt.Errorf("wordle: %w", err)
	}
	trainer.Progress = out
	// A warm-started run is warned of a collapse of its sampled reward.
	trainer.WarmStarted = s.Tiny && cfg.SFTSteps > 0 && s.From == ""
	s.Limit(trainer) // memory budget, Go's memory limit, the folder's lock
	if err := exkit.Resume(trainer, s.From, out); err != nil {
		return fmt.Errorf("wordle: %w", err)
	}
	before, err := play(ctx, policy, held, s.Tiny, maxNew)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "before GRPO: %s\n", before)
	env := games{answers: train, tiny: s.Tiny}
	_, stop, err := exkit.Train(ctx, "wordle", &cfg.Config, out, trainer.Step,
		func(ctx context.Context) error { return trainer.TrainEnv(ctx, env) },
		func() error { return nil })
	if stop || err != nil {
		return err
	}
	after, err := play(ctx, policy, held, s.Tiny, maxNew)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "after %d GRPO steps: %s\n", trainer.Step(), after)
	return nil
}

// score is what greedy games on held-out words came to.
type score struct{ games, won, moves, invalid int }

func (s score) String() string {
	return fmt.Sprintf("won %d of %d held-out games (%d moves, %d invalid)", s.won, s.games, s.moves, s.invalid)
}

// play plays one greedy game per answer, all games a turn at a time.
func play(ctx context.Context, p grpo.Policy, answers []string, tiny bool, maxNew int) (score, error) {
	sc := score{games: len(answers)}
	live := make([]*wordle.Game, len(answers))
	for i, a := range answers {
		live[i] = wordle.NewGame()
		if err := live[i].Reset(a, nil); err != nil {
			return sc, err
		}
	}
	for len(live) > 0 {
		exs := make([]dataset.Example, len(live))
		for i, g := range live {
			exs[i] = observe(g, tiny)
		}
		replies, err := exkit.Greedy(ctx, p, exs, maxNew, 32, nil)
		if err != nil {
			return sc, fmt.Errorf("wordle: %w", err)
		}
		next := live[:0]
		for i, g := range live {
			res, err := g.Step(replies[i])
			if err != nil {
				return sc, err
			}
			sc.moves++
			if res.Turn.Invalid != "" {
				sc.invalid++
			}
			switch {
			case g.Won():
				sc.won++
			case !g.Done():
				next = append(next, g)
			}
		}
		live = next
	}
	return sc, nil
}

func progress(cfg config) io.Writer {
	if cfg.Quiet {
		return nil
	}
	return cfg.Output()
}
