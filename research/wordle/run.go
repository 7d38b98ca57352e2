package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/envs/wordle"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/exkit"
	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/model"
)

// config is the Wordle example's settings.
type config struct {
	exkit.Config
	// Plain gives the tiny model the game's English prompt instead of the
	// compact facts.
	Plain bool `json:"plain_prompt"`
	// MaxEarlier is the most earlier guesses a GRPO training game starts
	// with (synthetic states from wordle.StateSampler); 0 plays every game
	// from the empty board.
	MaxEarlier int `json:"max_earlier"`
	// MaxCompletion is the most tokens generated per move.
	MaxCompletion int `json:"max_completion_length"`
	// SFTMoves is the number of solver moves (wordle.GameGenerator) the
	// warm start learns from.
	SFTMoves int `json:"sft_moves"`
	// SFTLR is the warm start's peak learning rate.
	SFTLR float64 `json:"sft_lr"`
	// Board is how the tiny model sees the board: "grid" (see grid) or
	// "facts" (see facts).
	Board string `json:"board"`
	// Scale divides the centred move rewards: group, batch or none (see
	// grpo.ScaleRewards).
	Scale string `json:"scale_rewards"`
	// Hidden and Layers shape the tiny model.
	Hidden int `json:"hidden"`
	Layers int `json:"layers"`
	// WarmDir keeps the tiny model's warm start: when it holds a model
	// (model.safetensors) GRPO starts from those weights and the warm start
	// is skipped; otherwise the warm start runs and saves its model there.
	// It lets GRPO settings be compared from one SFT model.
	WarmDir string `json:"warm_start_dir"`
	// RLAnswers is the number of training answers kept out of the warm
	// start and used only as GRPO's secrets (see splitTrain); 0 lets GRPO
	// play the warm start's own answers.
	RLAnswers int `json:"rl_answers"`
	// RLMode is what GRPO trains on: "games" (whole games through the
	// multi-turn Env) or "states" (single moves on the boards of the
	// policy's own greedy games, see statePool).
	RLMode string `json:"rl_mode"`
	// PoolGames and PoolEvery set the states mode's pool: greedy games
	// per refresh, and steps between refreshes.
	PoolGames int `json:"pool_games"`
	PoolEvery int `json:"pool_every"`
	// LetterCredit is the weight of per-letter credit in GRPO (see
	// wordle.LetterCredit and grpo.TokenCredit): each letter of a guess
	// that the board rules out at its position gets a lower advantage than
	// the letters that fit; 0 turns it off. The default 1 cut repeated
	// guesses and, from the same warm starts, ended 3.5 points above GRPO
	// without it on both seeds (README.md).
	LetterCredit float64 `json:"letter_credit"`
	// Weights weigh the move rewards in GRPO's advantages (default
	// grpoWeights); all zero means wordle.DefaultWeights.
	Weights wordle.Weights `json:"reward_weights"`
	// EvalTrain also evaluates, before and after GRPO, the first EvalTrain
	// training answers (greedy): whether GRPO improves the games it trains
	// on. 0 turns it off.
	EvalTrain int `json:"eval_train"`
	// EvalSamples also plays EvalSamples games per evaluated answer sampled
	// at the training temperature (the policy GRPO optimizes) beside the
	// greedy one. 0 turns it off.
	EvalSamples int `json:"eval_samples"`
}

// defaults are the settings of `go run ./research/wordle`. The budget is
// counted in steps, not minutes, so that a loaded machine gives the same
// run, only later: 12,000 warm-start steps and 200 GRPO steps took 14.7
// minutes on the idle 2-core CPU (7.8 of them the warm start and first
// evaluation), 28 with two runs side by side (see README.md).
// The warm start's length is what decides the win rate (2,000 steps:
// about 23% of held-out games won; 8,000: 55%; 12,000: 53–59%); GRPO
// adds 2.5 points to it on held-out answers (both seeds).
func defaults() config {
	return config{Config: exkit.Config{
		Train: "full", LoRARank: 8, Steps: 200, Generations: 8, Prompts: 8, GradientCheckpointing: true,
		LR: 3e-4, Beta: 0.05, Temperature: 1, SFTSteps: 12000, Eval: 200,
		Out: filepath.Join("runs", "wordle"), Seed: 1,
	}, Board: "grid", MaxCompletion: 24, SFTMoves: 100000, SFTLR: 3e-3, Scale: "batch", Hidden: 64, Layers: 2,
		RLMode: "games", PoolGames: 64, PoolEvery: 10, LetterCredit: 1, Weights: grpoWeights()}
}

// grpoWeights are the move rewards GRPO learns from: consistency (1) and
// its graded form Fit (2), format and validity as in envs/wordle, and no
// weight on partial credit or the win. Those two depend on the secret, not
// on the board: on training answers that the warm start has seen they
// reward remembering the answer, which does not carry over to held-out
// words, and they drown the board's own signal (with them GRPO lowered
// held-out wins; see README.md). A consistent guess is the move
// that can win, so consistency is what a player needs to learn.
func grpoWeights() wordle.Weights {
	return wordle.Weights{Format: 0.2, Valid: 0.2, Consistent: 1, Fit: 2}
}

func parse(cfg *config, args []string) error {
	return exkit.Parse("wordle", cfg, &cfg.Config, func(fs *flag.FlagSet) {
		fs.BoolVar(&cfg.Plain, "plain-prompt", cfg.Plain, "give the tiny model the game's English prompt, not the compact facts")
		fs.IntVar(&cfg.MaxEarlier, "max-earlier", cfg.MaxEarlier, "most earlier guesses a GRPO training game starts with (0-4)")
		fs.IntVar(&cfg.MaxCompletion, "max-completion", cfg.MaxCompletion, "most tokens per move")
		fs.IntVar(&cfg.SFTMoves, "sft-moves", cfg.SFTMoves, "solver moves the warm start learns from")
		fs.Float64Var(&cfg.SFTLR, "sft-lr", cfg.SFTLR, "warm-start peak learning rate")
		fs.StringVar(&cfg.Board, "board", cfg.Board, "tiny model's board: grid (aligned with the guess's letters) or facts")
		fs.StringVar(&cfg.Scale, "scale-rewards", cfg.Scale, "advantage scaling: group, batch or none")
		fs.IntVar(&cfg.Hidden, "hidden", cfg.Hidden, "tiny model width")
		fs.IntVar(&cfg.Layers, "layers", cfg.Layers, "tiny model layers")
		fs.Func("weights", "reward weights format,valid,consistent,partial,win[,fit] (e.g. 0.2,0.2,0.5,0.5,1)", func(v string) error {
			return parseWeights(&cfg.Weights, v)
		})
		fs.IntVar(&cfg.RLAnswers, "rl-answers", cfg.RLAnswers, "training answers kept out of the warm start, GRPO's only secrets (0: GRPO plays the warm start's answers)")
		fs.StringVar(&cfg.RLMode, "rl-mode", cfg.RLMode, "what GRPO trains on: games (whole games) or states (single moves on the boards of the policy's greedy games)")
		fs.IntVar(&cfg.PoolGames, "pool-games", cfg.PoolGames, "states mode: greedy games per refresh of the pool")
		fs.IntVar(&cfg.PoolEvery, "pool-every", cfg.PoolEvery, "states mode: GRPO steps between refreshes of the pool")
		fs.Float64Var(&cfg.LetterCredit, "letter-credit", cfg.LetterCredit, "weight of per-letter credit in GRPO's token advantages (0: off)")
		fs.IntVar(&cfg.EvalTrain, "eval-train", cfg.EvalTrain, "also evaluate the first N training answers (greedy) before and after GRPO")
		fs.IntVar(&cfg.EvalSamples, "eval-samples", cfg.EvalSamples, "also play N games per evaluated answer sampled at -temperature")
		fs.StringVar(&cfg.WarmDir, "warm-dir", cfg.WarmDir, "folder of the warm-started model: loaded when present (no warm start), else written after the warm start")
	}, args)
}

// tinyModel is the embedded default: a Llama-shaped decoder whose
// tokenizer has one token per fact of the board (see grid and facts) and
// per piece of the reply format, and spells words letter by letter: no
// merge joins two lower-case letters, so that each letter of a guess is a
// token of its own and the model picks a word one letter at a time (within
// the trie of answers, see replyTrie).
func tinyModel(hidden, layers int) exkit.Tiny {
	words := []string{"<think", "<guess", "</", ">", ">\n", "START", "INVALID", "GUESS"}
	words = append(words, turns[:]...)
	for _, p := range positions {
		words = append(words, "U"+string(p), "B"+string(p))
	}
	for _, l := range "abcdefghijklmnopqrstuvwxyz" {
		words = append(words, "X"+string(l), "P"+string(l))
		for _, p := range positions {
			for _, kind := range "GYN" {
				words = append(words, string(kind)+string(l)+string(p))
			}
		}
	}
	return exkit.Tiny{Words: words, Hidden: hidden, Layers: layers, Heads: 4, Intermediate: 4 * hidden, MaxPositions: 128}
}

// positions name the five letter positions in facts.
const positions = "ABCDE"

// turns name the turns in grid (letters only: the tokenizer splits
// digits and punctuation from letters).
var turns = [wordle.MaxTurns]string{"ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX"}

// facts writes what the board so far says about the secret, for the tiny
// model: one token per fact, each fact once, in a fixed order: "GcA" (C in
// position 1), "YrB" (R in the word, not in position 2), "NeD" (E not in
// position 4 and no further E: a gray copy of a letter that is green or
// yellow elsewhere in the same guess), "Xn" (no N in the word); then
// "GUESS". The empty board is "START GUESS". A rejected move adds
// "INVALID". Facts make the prompt's length grow with what is known, not
// with the number of guesses, and put each constraint on the next word in a
// token of its own.
func facts(history []wordle.Turn) string {
	var green, yellow, gray, absent []string
	seen := map[string]bool{}
	add := func(list *[]string, f string) {
		if !seen[f] {
			seen[f] = true
			*list = append(*list, f)
		}
	}
	invalid := eachCell(history, func(i int, l string, kind cellKind) {
		switch kind {
		case cellGreen:
			add(&green, "G"+l+positions[i:i+1])
		case cellYellow:
			add(&yellow, "Y"+l+positions[i:i+1])
		case cellNoMore:
			add(&gray, "N"+l+positions[i:i+1])
		default:
			add(&absent, "X"+l)
		}
	})
	var all []string
	for _, part := range [][]string{green, yellow, gray, absent} {
		slices.SortFunc(part, func(a, b string) int { return strings.Compare(a[2:]+a[1:2], b[2:]+b[1:2]) })
		all = append(all, part...)
	}
	if len(all) == 0 {
		all = append(all, "START")
	}
	if invalid {
		all = append(all, "INVALID")
	}
	return strings.Join(append(all, "GUESS"), " ") + "\n"
}

// grid writes the board for the tiny model as a grid aligned with the
// letters of the guess, one token per item: first the turn ("THREE"), the
// letters known to be absent ("Xn") and those known to be in the word
// ("Pr"); then rows of five cells, one per letter position, holding the
// letters excluded there ("YrB": R is in the word but not in position 2;
// "NeD": no further E, and not in position 4; "BB": nothing more for
// position 2); the last row holds what is known of each position ("GcA":
// C is in position 1, "UB": unknown), then "GUESS". The prompt changes
// after every move, even one that adds no fact (the turn), so that greedy
// play is not bound to repeat a wasted guess. Since the reply's prefix is
// fixed, the cell of letter position i in every row is at the same
// distance from the step that writes letter i: one attention head with a
// fixed relative offset finds it.
func grid(history []wordle.Turn) string {
	var absent, present []string
	var green [wordle.WordLen]string
	var excl [wordle.WordLen][]string
	seen := map[string]bool{}
	add := func(list *[]string, f string) {
		if !seen[f] {
			seen[f] = true
			*list = append(*list, f)
		}
	}
	invalid := eachCell(history, func(i int, l string, kind cellKind) {
		switch kind {
		case cellGreen:
			green[i] = "G" + l + positions[i:i+1]
			add(&present, "P"+l)
		case cellYellow:
			add(&excl[i], "Y"+l+positions[i:i+1])
			add(&present, "P"+l)
		case cellNoMore:
			add(&excl[i], "N"+l+positions[i:i+1])
		default:
			add(&absent, "X"+l)
		}
	})
	slices.Sort(absent)
	slices.Sort(present)
	parts := []string{turns[min(len(history), wordle.MaxTurns-1)]}
	parts = append(parts, absent...)
	parts = append(parts, present...)
	if invalid {
		parts = append(parts, "INVALID")
	}
	rows := 0
	for i := range excl {
		if green[i] != "" {
			excl[i] = nil // a known letter needs no exclusions
		}
		slices.SortFunc(excl[i], func(a, b string) int { return strings.Compare(a[1:2], b[1:2]) })
		rows = max(rows, len(excl[i]))
	}
	for r := 0; r < rows; r++ {
		for i := range excl {
			if r < len(excl[i]) {
				parts = append(parts, excl[i][r])
			} else {
				parts = append(parts, "B"+positions[i:i+1])
			}
		}
	}
	for i, gr := range green {
		if gr == "" {
			gr = "U" + positions[i:i+1]
		}
		parts = append(parts, gr)
	}
	return strings.Join(append(parts, "GUESS"), " ") + "\n"
}

// cellKind is what one cell of a guess's feedback says of its letter.
type cellKind int

const (
	cellGreen  cellKind = iota // the letter is in this position
	cellYellow                 // in the word, not in this position
	cellNoMore                 // gray, but a copy is green or yellow in the same guess: no further copy
	cellAbsent                 // not in the word
)

// eachCell calls f for every cell of the valid guesses in history, in
// order, and reports whether any move was rejected: the one reading of the
// feedback that both boards (facts, grid) render.
func eachCell(history []wordle.Turn, f func(i int, letter string, kind cellKind)) (invalid bool) {
	for _, t := range history {
		if t.Invalid != "" {
			invalid = true
			continue
		}
		for i, c := range t.Feedback {
			kind := cellAbsent
			switch {
			case c == wordle.Green:
				kind = cellGreen
			case c == wordle.Yellow:
				kind = cellYellow
			case coloredCopy(t, t.Guess[i]):
				kind = cellNoMore
			}
			f(i, t.Guess[i:i+1], kind)
		}
	}
	return invalid
}

// coloredCopy reports whether letter c of t's guess is green or yellow
// somewhere in that guess.
func coloredCopy(t wordle.Turn, c byte) bool {
	for i := 0; i < wordle.WordLen; i++ {
		if t.Guess[i] == c && t.Feedback[i] != wordle.Gray {
			return true
		}
	}
	return false
}

// reply is a well-formed move (wordle.Move's reply format).
func reply(word string) string { return wordle.Move{Guess: word}.Reply() }

// prompter turns a game state into the policy's prompt and rewards' data.
type prompter struct {
	tiny  bool
	board string
}

func (p prompter) example(g *wordle.Game) dataset.Example {
	var valid []string
	for _, t := range g.History() {
		if t.Invalid == "" {
			valid = append(valid, t.Guess)
		}
	}
	meta := map[string]string{wordle.MetaGuesses: strings.Join(valid, ",")}
	if p.tiny {
		text := grid(g.History())
		if p.board == "facts" {
			text = facts(g.History())
		}
		return dataset.Example{Prompt: text, Answer: g.Answer(), Meta: meta}
	}
	text := g.Prompt()
	return dataset.Example{Messages: []dataset.Message{{Role: "user", Content: text}}, Prompt: text, Answer: g.Answer(), Meta: meta}
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

func (ep *episode) Observe() dataset.Example { return ep.env.p.example(ep.game) }

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
	Step, Games, Wins, Moves, Invalid, WinTurns        int
	WinRate, MeanTurns                                 float64
	Format, Valid, Consistent, Partial                 float64
	FormatRate, ValidRate, ConsistentRate, MeanPartial float64
	// Repeats counts guesses already made earlier in the same game.
	Repeats int
	// Log is one line per game: the answer, then each guess with its
	// feedback ("G" green, "Y" yellow, "." gray) and "!" after a guess
	// inconsistent with the feedback before it.
	Log []string
}

// evaluate plays one greedy game per word, all games in lockstep (one
// Generate call per turn).
func evaluate(ctx context.Context, pol grpo.Policy, p prompter, words []string, maxNew int) (evalReport, error) {
	return play(ctx, pol, p, words, maxNew, 0)
}

// play is evaluate with the moves sampled at temperature when it is above
// 0 (seeded by the turn and the batch, so a run repeats), greedy at 0.
func play(ctx context.Context, pol grpo.Policy, p prompter, words []string, maxNew int, temperature float64) (evalReport, error) {
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
		var exs []dataset.Example
		for _, g := range games {
			if !g.Done() {
				active = append(active, g)
				exs = append(exs, p.example(g))
			}
		}
		if len(active) == 0 {
			break
		}
		var replies []string
		if temperature > 0 {
			for lo := 0; lo < len(exs); lo += 256 {
				hi := min(lo+256, len(exs))
				cs, err := pol.Generate(ctx, exs[lo:hi], 1, grpo.GenerateOptions{MaxCompletionLength: maxNew, Sampling: model.Sampling{Temperature: temperature},
					Seed: uint64(turn*100000 + lo + 1)})
				if err != nil {
					return r, err
				}
				for _, c := range cs {
					replies = append(replies, c.Text)
				}
			}
		} else {
			var err error
			if replies, err = exkit.Greedy(ctx, pol, exs, maxNew, 64, nil); err != nil {
				return r, err
			}
		}
		for i, g := range active {
			res, err := g.Step(replies[i])
			if err != nil {
				return r, err
			}
			r.Moves++
			for _, t := range g.History()[:len(g.History())-1] {
				if t.Guess == res.Turn.Guess {
					r.Repeats++
					break
				}
			}
			if res.Turn.Invalid != "" {
				r.Invalid++
			}
			r.Format += res.Breakdown.Format
			r.Valid += res.Breakdown.Valid
			r.Consistent += res.Breakdown.Consistent
			r.Partial += res.Breakdown.Partial
		}
	}
	r.Games = len(games)
	for _, g := range games {
		var b strings.Builder
		b.WriteString(g.Answer() + ":")
		h := g.History()
		for i, t := range h {
			fmt.Fprintf(&b, " %s(%s)", t.Guess, t.Feedback)
			if t.Invalid == "" {
				if bd, _ := wordle.ScoreMove(g.Answer(), h[:i], reply(t.Guess)); bd.Consistent == 0 {
					b.WriteString("!")
				}
			}
		}
		if g.Won() {
			b.WriteString(" won")
		}
		r.Log = append(r.Log, b.String())
		if g.Won() {
			r.Wins++
			r.WinTurns += len(g.History())
		}
	}
	r.WinRate = float64(r.Wins) / float64(max(1, r.Games))
	r.MeanTurns = float64(r.WinTurns) / float64(max(1, r.Wins))
	n := float64(max(1, r.Moves))
	r.FormatRate, r.ValidRate, r.ConsistentRate, r.MeanPartial = r.Format/n, r.Valid/n, r.Consistent/n, r.Partial/n
	return r, nil
}

func (r evalReport) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"step": r.Step, "games": r.Games, "wins": r.Wins, "moves": r.Moves,
		"win_rate": r.WinRate, "mean_turns_of_wins": r.MeanTurns, "invalid_moves": r.Invalid,
		"format_rate": r.FormatRate, "valid_rate": r.ValidRate,
		"consistent_rate": r.ConsistentRate, "mean_partial": r.MeanPartial, "repeated_guesses": r.Repeats})
}

// line is the report's one-line summary of an evaluation.
func (r evalReport) line() string {
	return fmt.Sprintf("win rate %.1f%% (%d/%d, mean %.2f guesses), moves %d: consistent %.1f%%, repeated %d, invalid %d, format %.1f%%",
		100*r.WinRate, r.Wins, r.Games, r.MeanTurns, r.Moves, 100*r.ConsistentRate, r.Repeats, r.Invalid, 100*r.FormatRate)
}

// replyTrie is the tiny model's constrained decoding: the reply format
// with one answer word as the guess, then EOS. Every move is then a valid
// word, and the model only decides which; the trie holds the 2,315 answers
// (not the 12,972 allowed guesses), since only an answer can win.
func replyTrie(s *exkit.Setup) (*model.Trie, int, error) {
	var seqs [][]int
	longest := 0
	for _, w := range wordle.Answers() {
		ids := s.Encode(reply(w))
		if back := s.Tok.Tokenizer.Decode(ids, false); back != reply(w) {
			return nil, 0, fmt.Errorf("wordle: reply %q decodes as %q", reply(w), back)
		}
		seqs = append(seqs, ids)
		longest = max(longest, len(ids)+1)
	}
	return model.NewTrie(seqs, s.Tok.EOS[0]), longest, nil
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
	if cfg.Board != "grid" && cfg.Board != "facts" {
		return fmt.Errorf("wordle: -board %q: want grid or facts", cfg.Board)
	}
	if !slices.Contains([]string{"group", "batch", "none"}, cfg.Scale) {
		return fmt.Errorf("wordle: -scale-rewards %q: want group, batch or none", cfg.Scale)
	}
	if cfg.Hidden < 4 || cfg.Hidden%4 != 0 || cfg.Layers < 1 {
		return fmt.Errorf("wordle: -hidden %d -layers %d: want a positive multiple of 4 and ≥ 1", cfg.Hidden, cfg.Layers)
	}
	if cfg.RLMode != "games" && cfg.RLMode != "states" {
		return fmt.Errorf("wordle: -rl-mode %q: want games or states", cfg.RLMode)
	}
	if cfg.EvalTrain < 0 || cfg.EvalSamples < 0 {
		return fmt.Errorf("wordle: -eval-train %d -eval-samples %d: want ≥ 0", cfg.EvalTrain, cfg.EvalSamples)
	}
	if cfg.PoolGames < 1 || cfg.PoolEvery < 1 {
		return fmt.Errorf("wordle: -pool-games %d -pool-every %d: want ≥ 1", cfg.PoolGames, cfg.PoolEvery)
	}
	train, test := wordle.SplitAnswers(uint64(cfg.Seed), max(200, cfg.Eval))
	if cfg.RLAnswers < 0 || cfg.RLAnswers >= len(train) {
		return fmt.Errorf("wordle: -rl-answers %d: want 0 to %d", cfg.RLAnswers, len(train)-1)
	}
	sftAnswers, rlAnswers := splitTrain(train, cfg.RLAnswers, uint64(cfg.Seed))
	if cfg.Weights == (wordle.Weights{}) {
		cfg.Weights = wordle.DefaultWeights()
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return fmt.Errorf("wordle: %w", err)
	}
	start := time.Now()
	s, err := exkit.Load("wordle", &cfg.Config, tinyModel(cfg.Hidden, cfg.Layers))
	if err != nil {
		return err
	}
	defer s.Close()
	p := prompter{tiny: s.Tiny && !cfg.Plain, board: cfg.Board}
	var constraint model.Constraint
	if s.Tiny {
		trie, longest, err := replyTrie(s)
		if err != nil {
			return err
		}
		constraint = trie
		cfg.MaxCompletion = max(cfg.MaxCompletion, longest)
	}
	policy, err := s.Policy(&cfg.Config, constraint)
	if err != nil {
		return fmt.Errorf("wordle: %w", err)
	}
	fmt.Fprintf(out, "wordle: model %s (%d parameters, %s training), tokenizer vocabulary %d; %d train answers (%d warm start, %d GRPO) / %d held-out\n",
		s.Dir, s.Model.NumParams(), cfg.Train, s.Tok.Tokenizer.VocabSize(), len(train), len(sftAnswers), len(rlAnswers), len(test))

	from := s.From
	warmLoaded := false
	if s.Tiny && cfg.WarmDir != "" && from == "" {
		if warmLoaded, err = loadWarm(s.Model, cfg.WarmDir); err != nil {
			return err
		}
		if warmLoaded {
			fmt.Fprintf(out, "\nwarm start: the model in %s (no supervised steps)\n", cfg.WarmDir)
		}
	}
	// The KL reference is a copy of the weights NewTrainer finds. A resumed
	// run skips the warm start, so the warm-started model kept in
	// Out/warm-start is loaded first (the checkpoint then replaces the
	// policy's weights, not the reference's); without it the reference
	// would be the untrained model.
	ownWarm := filepath.Join(cfg.Out, warmStartDir)
	if s.Tiny && from != "" && cfg.SFTSteps > 0 {
		ok, err := loadWarm(s.Model, ownWarm)
		if err != nil {
			return err
		}
		if !ok && cfg.Beta != 0 {
			return fmt.Errorf("wordle: -resume with -beta %g: %s holds no model.safetensors, the warm start that the KL term keeps GRPO near", cfg.Beta, ownWarm)
		}
		if ok {
			fmt.Fprintf(out, "KL reference: the warm start in %s\n", ownWarm)
		}
	}
	if s.Tiny && cfg.SFTSteps > 0 && from == "" && !warmLoaded {
		pairs, err := warmStart(cfg, p, sftAnswers)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "\nwarm start: %d supervised steps × 32 on %d moves of the solver's games (train answers; whole games and starts with up to 4 earlier guesses), lr %g\n",
			cfg.SFTSteps, len(pairs), cfg.SFTLR)
		var prog io.Writer = out
		if cfg.Quiet {
			prog = nil
		}
		if err := exkit.SFT(ctx, s, policy, pairs, cfg.SFTSteps, 32, cfg.SFTLR, cfg.Seed, prog); err != nil {
			return fmt.Errorf("wordle: %w", err)
		}
		if cfg.WarmDir != "" {
			if err := s.Model.Save(cfg.WarmDir); err != nil {
				return fmt.Errorf("wordle: save warm start: %w", err)
			}
		}
		warmLoaded = true
	}
	if warmLoaded {
		if err := s.Model.Save(ownWarm); err != nil {
			return fmt.Errorf("wordle: save warm start: %w", err)
		}
	}
	held := test[:min(cfg.Eval, len(test))]
	eval := func(step int) (evalReport, error) {
		r, err := evaluate(ctx, policy, p, held, cfg.MaxCompletion)
		if err != nil {
			return r, fmt.Errorf("wordle: evaluate: %w", err)
		}
		r.Step = step
		log := fmt.Sprintf("# step %d\n%s\n", step, strings.Join(r.Log, "\n"))
		if err := exkit.AppendText(filepath.Join(cfg.Out, "eval-games.txt"), log); err != nil {
			return r, err
		}
		return r, exkit.AppendJSONLine(filepath.Join(cfg.Out, "eval.jsonl"), r)
	}
	fmt.Fprintf(out, "\nevaluating %d held-out answers (never a secret in training), one greedy game each from the empty board (%s)\n",
		len(held), time.Since(start).Round(time.Second))
	gc := cfg.GRPO(5)
	gc.MaxPromptLength = 512
	gc.MaxCompletionLength = cfg.MaxCompletion
	gc.LRSchedulerType = grpo.ScheduleConstant
	gc.MaxTurns = wordle.MaxTurns
	gc.ScaleRewards = loss.ScaleRewards(cfg.Scale)
	trainer, err := grpo.NewTrainer(policy, gc, wordle.Rewards(cfg.Weights)...)
	if err != nil {
		return fmt.Errorf("wordle: %w", err)
	}
	trainer.Progress = out
	s.Limit(trainer)
	if cfg.LetterCredit != 0 {
		if err := trainer.SetTokenCredit(letterCredit(s.Tok.Tokenizer, cfg.LetterCredit)); err != nil {
			return fmt.Errorf("wordle: %w", err)
		}
	}
	if err := exkit.Resume(trainer, from, out); err != nil {
		return fmt.Errorf("wordle: %w", err)
	}
	before, err := eval(trainer.Step())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "before GRPO: %s\n", before.line())
	if err := extraEvals(ctx, cfg, policy, p, held, train, out, "before GRPO"); err != nil {
		return err
	}

	games := &env{seed: uint64(cfg.Seed), answers: rlAnswers, maxEarlier: cfg.MaxEarlier, p: p}
	var winSteps, winTotals []float64
	trainer.OnStep = func(m grpo.Metrics) {
		games.mu.Lock()
		winSteps, winTotals = append(winSteps, m["step"]), append(winTotals, float64(games.wins))
		games.mu.Unlock()
	}
	fmt.Fprintf(out, "\nGRPO: %d steps × %d games × %d samples per move, lr %g, beta %g, temperature %g, rewards scaled by %s std, weights %+v, letter credit %g (%s)\n",
		cfg.Steps, cfg.Prompts, cfg.Generations, cfg.LR, cfg.Beta, cfg.Temperature, cfg.Scale, cfg.Weights, cfg.LetterCredit, time.Since(start).Round(time.Second))
	trainFn := func(ctx context.Context) error { return trainer.TrainEnv(ctx, games) }
	var pool *statePool
	if cfg.RLMode == "states" {
		pool = &statePool{answers: rlAnswers, games: cfg.PoolGames, p: p, maxNew: cfg.MaxCompletion, size: max(1, cfg.Steps*cfg.Prompts)}
		var poolErr error
		trainer.OnStep = func(m grpo.Metrics) {
			winSteps, winTotals = append(winSteps, m["step"]), append(winTotals, float64(pool.Wins))
			if int(m["step"])%cfg.PoolEvery == 0 && poolErr == nil {
				w, n := pool.Wins, pool.Played
				poolErr = pool.refresh(ctx, policy)
				fmt.Fprintf(out, "state pool: %d boards from %d greedy games on GRPO answers, %d won (%d/%d so far)\n",
					len(pool.states), pool.Played-n, pool.Wins-w, pool.Wins, pool.Played)
			}
		}
		trainFn = func(ctx context.Context) error {
			if err := pool.refresh(ctx, policy); err != nil {
				return err
			}
			if err := trainer.Train(ctx, pool); err != nil {
				return err
			}
			return poolErr
		}
	}
	trainTime, stop, err := exkit.Train(ctx, "wordle", &cfg.Config, out, trainer.Step,
		trainFn,
		func() error { return plot(cfg.Out, winSteps, winTotals) })
	if stop || err != nil {
		return err
	}
	after, err := eval(trainer.Step())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "after %d GRPO steps: %s\n", trainer.Step(), after.line())
	if err := extraEvals(ctx, cfg, policy, p, held, train, out, fmt.Sprintf("after %d GRPO steps", trainer.Step())); err != nil {
		return err
	}
	if pool != nil {
		fmt.Fprintf(out, "(%s training, %s in all; the state pool's greedy games on GRPO answers: %d played, %d won)\n",
			trainTime.Round(time.Second), time.Since(start).Round(time.Second), pool.Played, pool.Wins)
	} else {
		fmt.Fprintf(out, "(%s training, %s in all; %d training games finished, %d won)\n",
			trainTime.Round(time.Second), time.Since(start).Round(time.Second), games.done, games.wins)
	}
	fmt.Fprintf(out, "\n%-30s %9s %9s\n", "held-out games, greedy", "SFT only", "+ GRPO")
	row := func(name string, b, a float64) { fmt.Fprintf(out, "%-30s %8.1f%% %8.1f%%\n", name, 100*b, 100*a) }
	row("win rate", before.WinRate, after.WinRate)
	fmt.Fprintf(out, "%-30s %9.2f %9.2f\n", "mean guesses of the wins", before.MeanTurns, after.MeanTurns)
	row("moves consistent", before.ConsistentRate, after.ConsistentRate)
	fmt.Fprintf(out, "%-30s %9d %9d\n", "repeated guesses", before.Repeats, after.Repeats)
	fmt.Fprintf(out, "%-30s %9d %9d\n", "invalid moves", before.Invalid, after.Invalid)
	row("moves well formatted", before.FormatRate, after.FormatRate)
	row("partial credit (mean)", before.MeanPartial, after.MeanPartial)
	fmt.Fprintf(out, "outputs in %s: metrics.jsonl, reward.png, wins.png, eval.jsonl, checkpoints\n", cfg.Out)
	return nil
}

// extraEvals prints the evaluations -eval-train and -eval-samples ask for:
// greedy games on the first EvalTrain training answers, and EvalSamples
// sampled games per answer on the held-out (and those training) answers.
func extraEvals(ctx context.Context, cfg config, pol grpo.Policy, p prompter, held, train []string, out io.Writer, label string) error {
	type answers struct {
		name  string
		words []string
	}
	sets := []answers{{"held-out", held}}
	if n := min(cfg.EvalTrain, len(train)); n > 0 {
		r, err := evaluate(ctx, pol, p, train[:n], cfg.MaxCompletion)
		if err != nil {
			return fmt.Errorf("wordle: evaluate training answers: %w", err)
		}
		fmt.Fprintf(out, "%s, %d training answers, greedy: %s\n", label, n, r.line())
		sets = append(sets, answers{"training", train[:n]})
	}
	if cfg.EvalSamples < 1 {
		return nil
	}
	for _, set := range sets {
		var words []string
		for range cfg.EvalSamples {
			words = append(words, set.words...)
		}
		r, err := play(ctx, pol, p, words, cfg.MaxCompletion, cfg.Temperature)
		if err != nil {
			return fmt.Errorf("wordle: sampled evaluation: %w", err)
		}
		fmt.Fprintf(out, "%s, %d %s answers × %d games sampled at temperature %g: %s\n", label, len(set.words), set.name, cfg.EvalSamples, cfg.Temperature, r.line())
	}
	return nil
}

// warmStart builds the supervised pairs: the moves of games the solver
// plays for training answers (wordle.GameGenerator), whole games and starts
// with up to 4 random earlier guesses, each as the policy's prompt and the
// solver's reply.
func warmStart(cfg config, p prompter, train []string) ([]exkit.Pair, error) {
	solver, err := wordle.NewSolver(wordle.Answers())
	if err != nil {
		return nil, fmt.Errorf("wordle: warm start: %w", err)
	}
	gen, err := wordle.NewGameGenerator(uint64(cfg.Seed)+7, train, solver, 4)
	if err != nil {
		return nil, fmt.Errorf("wordle: warm start: %w", err)
	}
	moves, err := gen.Moves(max(1, cfg.SFTMoves))
	if err != nil {
		return nil, fmt.Errorf("wordle: warm start: %w", err)
	}
	pairs := make([]exkit.Pair, len(moves))
	g := wordle.NewGame()
	for i, m := range moves {
		var earlier []string
		for _, t := range m.History {
			earlier = append(earlier, t.Guess)
		}
		if err := g.Reset(m.Answer, earlier); err != nil {
			return nil, fmt.Errorf("wordle: warm start: %w", err)
		}
		pairs[i] = exkit.Pair{Prompt: p.example(g), Target: m.Reply()}
	}
	return pairs, nil
}

// splitTrain splits the training answers: n of them (drawn with seed) are
// GRPO's secrets only, the rest the warm start's; with n = 0 both are all
// of train. The warm start learns the solver's games of its answers by
// heart (greedy, it wins about 90% of them against about 60% of held-out
// answers), so GRPO on those games trains where the model already wins and
// the boards of new answers are never seen: on answers the warm start has
// not seen, GRPO's games look like the held-out ones.
func splitTrain(train []string, n int, seed uint64) (sft, rl []string) {
	if n <= 0 {
		return train, train
	}
	a := slices.Clone(train)
	rand.New(rand.NewPCG(seed, 0x726c)).Shuffle(len(a), func(i, j int) { a[i], a[j] = a[j], a[i] })
	sft, rl = a[n:], a[:n]
	slices.Sort(sft)
	slices.Sort(rl)
	return sft, rl
}

// warmStartDir is the folder under Out that keeps the warm-started model
// of a run: the KL reference when the run is resumed.
const warmStartDir = "warm-start"

// loadWarm sets m's weights from dir/model.safetensors; it reports false
// when dir holds no model.
func loadWarm(m *model.Model, dir string) (bool, error) {
	path := filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	ts, err := model.ReadSafetensors(path)
	if err != nil {
		return false, fmt.Errorf("wordle: warm start: %w", err)
	}
	for _, t := range ts {
		if err := m.SetWeight(t.Name, t.Data, t.Shape); err != nil {
			return false, fmt.Errorf("wordle: warm start %s: %w", dir, err)
		}
	}
	return true, nil
}

// parseWeights reads "format,valid,consistent,partial,win[,fit]" into w.
func parseWeights(w *wordle.Weights, v string) error {
	parts := strings.Split(v, ",")
	if len(parts) != 5 && len(parts) != 6 {
		return fmt.Errorf("want 5 or 6 comma-separated weights (format,valid,consistent,partial,win[,fit]), got %q", v)
	}
	var f [6]float64
	for i, p := range parts {
		x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || x < 0 {
			return fmt.Errorf("weight %q: want a number ≥ 0", p)
		}
		f[i] = x
	}
	*w = wordle.Weights{Format: f[0], Valid: f[1], Consistent: f[2], Partial: f[3], Win: f[4], Fit: f[5]}
	return nil
}

// plot draws the rewards per step and the cumulative wins of the training
// games.
func plot(dir string, steps, wins []float64) error {
	keys := []string{"reward"}
	for _, r := range wordle.Rewards(wordle.DefaultWeights()) {
		keys = append(keys, "rewards/"+r.Name+"/mean")
	}
	lines, err := exkit.MetricLines(filepath.Join(dir, checkpoint.MetricsFile), 0, keys...)
	if err != nil {
		return err
	}
	if err := exkit.PlotLines(filepath.Join(dir, "reward.png"), "wordle: mean move rewards per GRPO step", "step", "reward", lines...); err != nil {
		return err
	}
	return exkit.PlotLines(filepath.Join(dir, "wins.png"), "wordle: cumulative wins of training games", "step", "games won",
		exkit.Line{Name: "wins", X: steps, Y: wins})
}
