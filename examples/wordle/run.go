package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/grpokit/grpokit/envs/wordle"
	"github.com/grpokit/grpokit/examples/internal/exkit"
	"github.com/grpokit/grpokit/grpo"
)

// config is the Wordle example's settings.
type config struct {
	exkit.Config
	// Plain gives the tiny model the game's English prompt instead of the
	// compact board.
	Plain bool `json:"plain_prompt"`
	// MaxEarlier is the most earlier guesses a training game starts with
	// (synthetic states from wordle.StateSampler); 0 starts every game from
	// the empty board.
	MaxEarlier int `json:"max_earlier"`
	// MaxCompletion is the most tokens generated per move.
	MaxCompletion int `json:"max_completion_length"`
}

// defaults are the settings of `go run ./examples/wordle`.
func defaults() config {
	return config{Config: exkit.Config{
		Train: "full", LoRARank: 8, Steps: 40, Generations: 8, Prompts: 2,
		LR: 3e-4, Temperature: 1, SFTSteps: 150, Eval: 30,
		Out: filepath.Join("runs", "wordle"), Seed: 1,
	}, MaxEarlier: 3, MaxCompletion: 16}
}

func parse(cfg *config, args []string) error {
	return exkit.Parse("wordle", cfg, &cfg.Config, func(fs *flag.FlagSet) {
		fs.BoolVar(&cfg.Plain, "plain-prompt", cfg.Plain, "give the tiny model the game's English prompt, not the compact board")
		fs.IntVar(&cfg.MaxEarlier, "max-earlier", cfg.MaxEarlier, "most earlier guesses a training game starts with (0-4)")
		fs.IntVar(&cfg.MaxCompletion, "max-completion", cfg.MaxCompletion, "most tokens per move")
	}, args)
}

// tinyModel is the embedded default: 2 layers of width 64 and a tokenizer
// in which every answer word and each piece of the reply format is one
// token.
func tinyModel() exkit.Tiny {
	words := append(wordle.Answers(), "user", "assistant", "<think", "<guess", "think", "guess", "</", ">", ">\n", "invalid")
	return exkit.Tiny{Words: words, Hidden: 64, Layers: 2, Heads: 4, Intermediate: 256, MaxPositions: 256}
}

// board writes the game so far compactly for the tiny model, a line per
// guess with its feedback as digits (2 green, 1 yellow, 0 gray):
// "crane 00102". A rejected move shows as "invalid".
func board(history []wordle.Turn) string {
	var b strings.Builder
	for _, t := range history {
		if t.Invalid != "" {
			b.WriteString("invalid\n")
			continue
		}
		b.WriteString(t.Guess + " ")
		for _, c := range t.Feedback {
			b.WriteByte('0' + byte(c))
		}
		b.WriteString("\n")
	}
	b.WriteString("guess\n")
	return b.String()
}

// reply is a well-formed move.
func reply(word string) string { return "<think>\n</think>\n<guess>" + word + "</guess>" }

// prompter turns a game state into the policy's prompt and rewards' data.
type prompter struct{ tiny bool }

func (p prompter) example(g *wordle.Game) grpo.Example {
	var valid []string
	for _, t := range g.History() {
		if t.Invalid == "" {
			valid = append(valid, t.Guess)
		}
	}
	meta := map[string]string{wordle.MetaGuesses: strings.Join(valid, ",")}
	if p.tiny {
		return grpo.Example{Prompt: board(g.History()), Answer: g.Answer(), Meta: meta}
	}
	text := g.Prompt()
	return grpo.Example{Messages: []grpo.Message{{Role: "user", Content: text}}, Prompt: text, Answer: g.Answer(), Meta: meta}
}

// env is the grpo.Env of Wordle games: episode i is a secret from the
// training words with 0..maxEarlier earlier guesses, drawn from a seed made
// of the run's seed and i. It counts the games the trainer wins.
type env struct {
	seed       uint64
	answers    []string
	maxEarlier int
	p          prompter

	mu         sync.Mutex
	wins, done int
}

func (e *env) Episode(i int) (grpo.Episode, error) {
	s := wordle.NewStateSampler(e.seed^uint64(i+1)*0x9e3779b97f4a7c15, e.answers)
	st := s.Next()
	k := rand.New(rand.NewPCG(e.seed, uint64(i))).IntN(e.maxEarlier + 1)
	g := wordle.NewGame()
	if err := g.Reset(st.Answer, st.Earlier[:min(k, len(st.Earlier))]); err != nil {
		return nil, err
	}
	return &episode{env: e, game: g}, nil
}

type episode struct {
	env  *env
	game *wordle.Game
}

func (ep *episode) Observe() grpo.Example { return ep.env.p.example(ep.game) }

func (ep *episode) Step(completion string) (bool, error) {
	res, err := ep.game.Step(completion)
	if err != nil {
		return true, err
	}
	if res.Done {
		ep.env.mu.Lock()
		ep.env.done++
		if res.Won {
			ep.env.wins++
		}
		ep.env.mu.Unlock()
	}
	return res.Done, nil
}

// evalReport is one evaluation: full games from the empty board on
// held-out words; the component sums become rates per move.
type evalReport struct {
	Step, Games, Wins, Moves                           int
	WinRate                                            float64
	Format, Valid, Consistent, Partial                 float64
	FormatRate, ValidRate, ConsistentRate, MeanPartial float64
}

// evaluate plays one greedy game per word, all games in lockstep (one
// Generate call per turn).
func evaluate(ctx context.Context, pol grpo.Policy, p prompter, words []string, maxNew int) (evalReport, error) {
	var r evalReport
	games := make([]*wordle.Game, len(words))
	for i, w := range words {
		games[i] = wordle.NewGame()
		if err := games[i].Reset(w, nil); err != nil {
			return r, err
		}
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
		replies, err := exkit.Greedy(ctx, pol, exs, maxNew, 64)
		if err != nil {
			return r, err
		}
		for i, g := range active {
			res, err := g.Step(replies[i])
			if err != nil {
				return r, err
			}
			r.Moves++
			r.Format += res.Breakdown.Format
			r.Valid += res.Breakdown.Valid
			r.Consistent += res.Breakdown.Consistent
			r.Partial += res.Breakdown.Partial
		}
	}
	r.Games = len(games)
	for _, g := range games {
		if g.Won() {
			r.Wins++
		}
	}
	r.WinRate = float64(r.Wins) / float64(max(1, r.Games))
	n := float64(max(1, r.Moves))
	r.FormatRate, r.ValidRate, r.ConsistentRate, r.MeanPartial = r.Format/n, r.Valid/n, r.Consistent/n, r.Partial/n
	return r, nil
}

func (r evalReport) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"step": r.Step, "games": r.Games, "wins": r.Wins, "moves": r.Moves,
		"win_rate": r.WinRate, "format_rate": r.FormatRate, "valid_rate": r.ValidRate,
		"consistent_rate": r.ConsistentRate, "mean_partial": r.MeanPartial})
}

func run(ctx context.Context, cfg config) error {
	out := cfg.Output()
	if err := cfg.Validate("wordle"); err != nil {
		return err
	}
	if cfg.MaxEarlier < 0 || cfg.MaxEarlier > 4 {
		return fmt.Errorf("wordle: -max-earlier %d: want 0 to 4", cfg.MaxEarlier)
	}
	if cfg.MaxCompletion < 8 {
		return fmt.Errorf("wordle: -max-completion %d: want ≥ 8", cfg.MaxCompletion)
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return fmt.Errorf("wordle: %w", err)
	}
	start := time.Now()
	s, err := exkit.Load("wordle", &cfg.Config, tinyModel())
	if err != nil {
		return err
	}
	policy, err := s.Policy(&cfg.Config, nil)
	if err != nil {
		return fmt.Errorf("wordle: %w", err)
	}
	p := prompter{tiny: s.Tiny && !cfg.Plain}
	train, test := wordle.SplitAnswers(uint64(cfg.Seed), 200)
	fmt.Fprintf(out, "wordle: model %s (%d parameters, %s training), tokenizer vocabulary %d; %d train / %d held-out words\n",
		s.Dir, s.Model.NumParams(), cfg.Train, s.Tok.Tokenizer.VocabSize(), len(train), len(test))

	from, err := cfg.Checkpoint()
	if err != nil {
		return fmt.Errorf("wordle: %w", err)
	}
	if s.Tiny && cfg.SFTSteps > 0 && from == "" {
		pairs, err := warmStart(cfg, p, train)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "\nwarm start: %d supervised steps on the reply format (targets: a random word consistent with the board)\n", cfg.SFTSteps)
		var prog io.Writer = out
		if cfg.Quiet {
			prog = nil
		}
		if err := exkit.SFT(ctx, s, policy, pairs, cfg.SFTSteps, 32, 3e-3, cfg.Seed, prog); err != nil {
			return fmt.Errorf("wordle: %w", err)
		}
	}
	held := test[:min(cfg.Eval, len(test))]
	eval := func(step int) (evalReport, error) {
		r, err := evaluate(ctx, policy, p, held, cfg.MaxCompletion)
		if err != nil {
			return r, fmt.Errorf("wordle: evaluate: %w", err)
		}
		r.Step = step
		return r, appendJSON(filepath.Join(cfg.Out, "eval.jsonl"), r)
	}
	fmt.Fprintf(out, "\nevaluating %d held-out games from the empty board (greedy)\n", len(held))
	gc := cfg.GRPO(5)
	gc.MaxPromptLength = 512
	gc.MaxCompletionLength = cfg.MaxCompletion
	gc.LRSchedulerType = grpo.ScheduleConstant
	gc.MaxTurns = wordle.MaxTurns
	trainer, err := grpo.NewTrainer(policy, gc, wordle.Rewards(wordle.DefaultWeights())...)
	if err != nil {
		return fmt.Errorf("wordle: %w", err)
	}
	trainer.Progress = out
	if err := exkit.Resume(trainer, from, out); err != nil {
		return fmt.Errorf("wordle: %w", err)
	}
	before, err := eval(trainer.Step())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "before GRPO: win rate %.1f%%, moves %d: format %.1f%%, valid %.1f%%, consistent %.1f%%\n",
		100*before.WinRate, before.Moves, 100*before.FormatRate, 100*before.ValidRate, 100*before.ConsistentRate)

	games := &env{seed: uint64(cfg.Seed), answers: train, maxEarlier: cfg.MaxEarlier, p: p}
	var winSteps, winTotals []float64
	trainer.OnStep = func(m grpo.Metrics) {
		games.mu.Lock()
		winSteps, winTotals = append(winSteps, m["step"]), append(winTotals, float64(games.wins))
		games.mu.Unlock()
	}
	fmt.Fprintf(out, "\nGRPO: %d steps × %d games × %d samples per move, lr %g\n", cfg.Steps, cfg.Prompts, cfg.Generations, cfg.LR)
	trainTime, stop, err := exkit.Train(ctx, "wordle", &cfg.Config, out, trainer.Step,
		func(ctx context.Context) error { return trainer.TrainEnv(ctx, games) },
		func() error { return plot(cfg.Out, winSteps, winTotals) })
	if stop || err != nil {
		return err
	}
	after, err := eval(trainer.Step())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "after %d GRPO steps (%s training, %s in all; %d training games finished, %d won)\n",
		trainer.Step(), trainTime.Round(time.Second), time.Since(start).Round(time.Second), games.done, games.wins)
	fmt.Fprintf(out, "\n%-26s %8s %8s\n", "held-out games, greedy", "before", "after")
	row := func(name string, b, a float64) { fmt.Fprintf(out, "%-26s %7.1f%% %7.1f%%\n", name, 100*b, 100*a) }
	row("win rate", before.WinRate, after.WinRate)
	row("moves well formatted", before.FormatRate, after.FormatRate)
	row("moves valid words", before.ValidRate, after.ValidRate)
	row("moves consistent", before.ConsistentRate, after.ConsistentRate)
	row("partial credit (mean)", before.MeanPartial, after.MeanPartial)
	fmt.Fprintf(out, "outputs in %s: metrics.jsonl, reward.png, wins.png, eval.jsonl, checkpoints\n", cfg.Out)
	return nil
}

// warmStart builds supervised pairs: random training states, each answered
// with a well-formed move naming a random answer word consistent with the
// board (what a hard-mode player might guess).
func warmStart(cfg config, p prompter, train []string) ([]exkit.Pair, error) {
	ss := wordle.NewStateSampler(uint64(cfg.Seed)+7, train)
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 11))
	all := wordle.Answers()
	var pairs []exkit.Pair
	for len(pairs) < 2000 {
		st := ss.Next()
		g := wordle.NewGame()
		if err := g.Reset(st.Answer, st.Earlier); err != nil {
			return nil, fmt.Errorf("wordle: warm start: %w", err)
		}
		h := g.History()
		var cands []string
		for _, w := range all {
			ok := true
			for _, t := range h {
				if !wordle.Consistent(w, t.Guess, t.Feedback) {
					ok = false
					break
				}
			}
			if ok {
				cands = append(cands, w)
			}
		}
		if len(cands) == 0 {
			continue
		}
		pairs = append(pairs, exkit.Pair{Prompt: p.example(g), Target: reply(cands[rng.IntN(len(cands))])})
	}
	return pairs, nil
}

func appendJSON(path string, v any) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("wordle: %w", err)
	}
	line, err := json.Marshal(v)
	if err != nil {
		return errors.Join(err, f.Close())
	}
	_, err = f.Write(append(line, '\n'))
	return errors.Join(err, f.Close())
}

// plot draws the rewards per step and the cumulative wins of the training
// games.
func plot(dir string, steps, wins []float64) error {
	keys := []string{"reward"}
	for _, r := range wordle.Rewards(wordle.DefaultWeights()) {
		keys = append(keys, "rewards/"+r.Name+"/mean")
	}
	lines, err := exkit.MetricLines(filepath.Join(dir, grpo.MetricsFile), 0, keys...)
	if err != nil {
		return err
	}
	if err := exkit.PlotLines(filepath.Join(dir, "reward.png"), "wordle: mean move rewards per GRPO step", "step", "reward", lines...); err != nil {
		return err
	}
	return exkit.PlotLines(filepath.Join(dir, "wins.png"), "wordle: cumulative wins of training games", "step", "games won",
		exkit.Line{Name: "wins", X: steps, Y: wins})
}
