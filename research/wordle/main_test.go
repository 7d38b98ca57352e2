package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/envs/wordle"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/exkit"
)

func TestRunSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for 1 to 2 steps")
	}
	for _, mode := range []string{"games", "states"} {
		t.Run(mode, func(t *testing.T) {
			var out bytes.Buffer
			cfg := defaults()
			cfg.Steps, cfg.SFTSteps, cfg.Prompts, cfg.Generations, cfg.Eval, cfg.MaxCompletion, cfg.MaxEarlier = 1, 1, 1, 2, 1, 8, 4
			cfg.SFTMoves, cfg.Hidden, cfg.Layers, cfg.TimeLimit = 20, 16, 1, 0
			cfg.RLMode, cfg.RLAnswers = mode, 100
			cfg.LetterCredit = 1 // the per-letter token advantages too
			want := []string{"before GRPO", "after 1 GRPO steps", "moves consistent"}
			if mode == "games" {
				// The extra evaluations: 2 training answers greedy, and 2
				// sampled games for each evaluated answer.
				cfg.EvalTrain, cfg.EvalSamples = 2, 2
				want = append(want, "after 1 GRPO steps, 2 training answers, greedy: win rate",
					"before GRPO, 1 held-out answers × 2 games sampled at temperature 1: win rate", "/2, mean",
					"after 1 GRPO steps, 2 training answers × 2 games sampled at temperature 1: win rate", "/4, mean")
			}
			if mode == "states" {
				// Two steps, the pool refreshed after each: 3 × 2 games.
				cfg.Steps, cfg.PoolGames, cfg.PoolEvery = 2, 2, 1
				want = []string{"after 2 GRPO steps", "greedy games on GRPO answers: 6 played"}
			}
			cfg.Out, cfg.Quiet, cfg.Stdout = t.TempDir(), true, &out
			if err := run(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			for _, w := range want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, f := range []string{"metrics.jsonl", "reward.png", "wins.png", "eval.jsonl"} {
				if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
					t.Error(err)
				}
			}
			if m, err := os.ReadFile(filepath.Join(cfg.Out, "metrics.jsonl")); err != nil || !strings.Contains(string(m), "token_credit/letters/mean") {
				t.Errorf("metrics.jsonl lacks the letter credit (%v)", err)
			}
		})
	}
}

func TestEnvMoves(t *testing.T) {
	train, _ := wordle.SplitAnswers(1, 200)
	for _, tiny := range []bool{true, false} {
		e := &env{seed: 5, answers: train, maxEarlier: 0, p: prompter{tiny: tiny, board: "grid"}}
		ep, err := e.Episode(0)
		if err != nil {
			t.Fatal(err)
		}
		secret := ep.Observe().Answer
		// An unknown word uses up the turn; the next prompt says why.
		done, err := ep.Step(reply("qzxvy"))
		if err != nil || done {
			t.Fatalf("unknown word: done %v, err %v", done, err)
		}
		next := ep.Observe().Prompt
		want := `not an allowed word: "qzxvy"`
		if tiny {
			want = "TWO INVALID UA UB UC UD UE GUESS\n"
		}
		if !strings.Contains(next, want) {
			t.Errorf("tiny=%v: prompt after an unknown word lacks %q:\n%s", tiny, want, next)
		}
		if done, err := ep.Step(reply(secret)); err != nil || !done || e.wins != 1 || e.done != 1 {
			t.Errorf("winning move: done %v err %v wins %d", done, err, e.wins)
		}
	}
}

func TestFacts(t *testing.T) {
	tests := []struct {
		answer  string
		earlier []string
		want    string
	}{
		{"cigar", nil, "START GUESS\n"},
		// Hand-computed: CRANE vs CIGAR is GYY..; PIOUS vs CIGAR is .G...
		{"cigar", []string{"crane", "pious"}, "GcA GiB YrB YaC Xe Xn Xo Xp Xs Xu GUESS\n"},
		// SPEED vs ABIDE is ..Y.Y: the second E is gray while the first is
		// yellow, so E is in the word but not in position 4 (and once only).
		{"abide", []string{"speed"}, "YeC YdE NeD Xp Xs GUESS\n"},
	}
	for _, tc := range tests {
		h, err := wordle.HistoryFor(tc.answer, tc.earlier)
		if err != nil {
			t.Fatal(err)
		}
		if got := facts(h); got != tc.want {
			t.Errorf("facts(%s %v) = %q, want %q", tc.answer, tc.earlier, got, tc.want)
		}
	}
	if got := facts([]wordle.Turn{{Guess: "qzxvy", Invalid: "x"}}); got != "START INVALID GUESS\n" {
		t.Errorf("facts after an invalid move = %q", got)
	}
}

// TestGrid: the aligned board, hand-computed. Every row has five cells,
// one per letter position, so that cell i of each row is at a fixed
// distance from letter i of the reply.
func TestGrid(t *testing.T) {
	tests := []struct {
		answer  string
		earlier []string
		want    string
	}{
		{"cigar", nil, "ONE UA UB UC UD UE GUESS\n"},
		// CRANE vs CIGAR is GYY..; PIOUS vs CIGAR is .G...: R's exclusion
		// at position 2 is dropped because I is known there.
		{"cigar", []string{"crane", "pious"}, "THREE Xe Xn Xo Xp Xs Xu Pa Pc Pi Pr BA BB YaC BD BE GcA GiB UC UD UE GUESS\n"},
		// SPEED vs ABIDE is ..Y.Y: E is in the word, not in position 3,
		// and not twice (the gray second E); D is in the word, not last.
		{"abide", []string{"speed"}, "TWO Xp Xs Pd Pe BA BB YeC NeD YdE UA UB UC UD UE GUESS\n"},
		// Two rows: RAISE vs ABIDE is .YG.G, LEASE vs ABIDE is .NY.G
		// (the E in position 2 is gray, the last one green). Position 2
		// excludes A and E; A's exclusion at position 3 is dropped (I is
		// known there).
		{"abide", []string{"raise", "lease"}, "THREE Xl Xr Xs Pa Pe Pi BA YaB BC BD BE BA NeB BC BD BE UA UB GiC UD GeE GUESS\n"},
	}
	for _, tc := range tests {
		h, err := wordle.HistoryFor(tc.answer, tc.earlier)
		if err != nil {
			t.Fatal(err)
		}
		if got := grid(h); got != tc.want {
			t.Errorf("grid(%s %v) = %q, want %q", tc.answer, tc.earlier, got, tc.want)
		}
	}
	if got := grid([]wordle.Turn{{Guess: "qzxvy", Invalid: "x"}}); got != "TWO INVALID UA UB UC UD UE GUESS\n" {
		t.Errorf("grid after an invalid move = %q", got)
	}
}

// TestTinyTokens: every fact is one token of the tiny tokenizer, every
// letter of a guess is one, and every answer's reply fits the trie.
func TestTinyTokens(t *testing.T) {
	cfg := defaults()
	cfg.Out = t.TempDir()
	s, err := exkit.Load("wordle", &cfg.Config, tinyModel(8, 1))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := wordle.HistoryFor("abide", []string{"speed", "crane", "pious"})
	for _, text := range []string{facts(h), grid(h), grid(nil)} {
		if ids := s.Encode(text); len(ids) != len(strings.Fields(text))+1 { // + the newline
			t.Errorf("board %q takes %d tokens", text, len(ids))
		}
	}
	trie, longest, err := replyTrie(s)
	if err != nil {
		t.Fatal(err)
	}
	pre := s.Encode("<think>\n</think>\n<guess>")
	for _, w := range []string{"cigar", "abide", "zonal"} {
		ids := append(s.Encode(reply(w)), s.Tok.EOS[0])
		if len(ids) != longest || len(ids) != len(pre)+13 { // 5 letters, "</", g u e s s, ">", EOS
			t.Errorf("reply(%s): %d tokens, longest %d", w, len(ids), longest)
		}
		for i := range ids {
			if !slices.Contains(trie.Allowed(ids[:i]), ids[i]) {
				t.Fatalf("trie refuses token %d of reply(%s)", i, w)
			}
		}
	}
}

func TestBadConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "wordle.json")
	if err := os.WriteFile(file, []byte(`{"steps": "many"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := defaults()
	err := parse(&cfg, []string{"-config", file})
	if err == nil || !strings.Contains(err.Error(), "wordle: config "+file) || !strings.Contains(err.Error(), "steps") {
		t.Fatalf("error %v, want it to name the file and the field", err)
	}
	cfg = defaults()
	cfg.MaxEarlier = 9
	if err := run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "-max-earlier 9: want 0 to 4") {
		t.Fatalf("error %v", err)
	}
	cfg = defaults()
	cfg.RLAnswers = 2115
	if err := run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "-rl-answers 2115: want 0 to 2114") {
		t.Fatalf("error %v", err)
	}
	cfg = defaults()
	cfg.RLMode = "moves"
	if err := run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), `-rl-mode "moves": want games or states`) {
		t.Fatalf("error %v", err)
	}
	cfg = defaults()
	cfg.PoolEvery = 0
	if err := run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "-pool-every 0: want ≥ 1") {
		t.Fatalf("error %v", err)
	}
	cfg = defaults()
	cfg.EvalSamples = -1
	if err := run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "-eval-samples -1: want ≥ 0") {
		t.Fatalf("error %v", err)
	}
}

// TestSplitTrain: the GRPO answers and the warm start's are disjoint,
// cover train, have the asked sizes, depend on the seed, and n = 0 gives
// both all of train.
func TestSplitTrain(t *testing.T) {
	train, test := wordle.SplitAnswers(1, 200)
	sft, rl := splitTrain(train, 500, 1)
	if len(sft) != len(train)-500 || len(rl) != 500 {
		t.Fatalf("sizes %d / %d, want %d / 500", len(sft), len(rl), len(train)-500)
	}
	all := append(slices.Clone(sft), rl...)
	slices.Sort(all)
	if !slices.Equal(all, train) {
		t.Error("warm-start and GRPO answers together are not the training answers, each once")
	}
	for _, w := range test {
		if slices.Contains(rl, w) || slices.Contains(sft, w) {
			t.Errorf("held-out %q in a training split", w)
		}
	}
	if _, rl2 := splitTrain(train, 500, 2); slices.Equal(rl, rl2) {
		t.Error("seeds 1 and 2 draw the same GRPO answers")
	}
	if _, rl3 := splitTrain(train, 500, 1); !slices.Equal(rl, rl3) {
		t.Error("seed 1 twice draws different GRPO answers")
	}
	if sft0, rl0 := splitTrain(train, 0, 1); !slices.Equal(sft0, train) || !slices.Equal(rl0, train) {
		t.Error("n = 0: want train for both")
	}
}

// solverPolicy plays wordle.Solver's moves (or always reply when it is
// set): the evaluation's counts must match the solver's own games.
type solverPolicy struct {
	grpo.Policy
	s     *wordle.Solver
	reply string
}

func (p solverPolicy) Generate(_ context.Context, exs []dataset.Example, n int, _ grpo.GenerateOptions) ([]grpo.Completion, error) {
	var out []grpo.Completion
	for _, ex := range exs {
		text := p.reply
		if text == "" {
			var earlier []string
			if g := ex.Meta[wordle.MetaGuesses]; g != "" {
				earlier = strings.Split(g, ",")
			}
			h, err := wordle.HistoryFor(ex.Answer, earlier)
			if err != nil {
				return nil, err
			}
			w, err := p.s.Next(h)
			if err != nil {
				return nil, err
			}
			text = reply(w)
		}
		for range n {
			out = append(out, grpo.Completion{Text: text})
		}
	}
	return out, nil
}

func TestEvaluate(t *testing.T) {
	s, err := wordle.NewSolver(wordle.Answers())
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"cigar", "hatch", "watch", "robot", "jazzy", "mamma", "eerie", "taunt"}
	wins, turns := 0, 0
	for _, w := range words {
		made, won, err := s.Play(w, nil)
		if err != nil {
			t.Fatal(err)
		}
		if won {
			wins++
			turns += len(made)
		}
	}
	r, err := evaluate(context.Background(), solverPolicy{s: s}, prompter{tiny: true}, words, 24)
	if err != nil {
		t.Fatal(err)
	}
	if r.Games != len(words) || r.Wins != wins || r.WinTurns != turns || r.Invalid != 0 || r.ConsistentRate != 1 || r.FormatRate != 1 {
		t.Errorf("evaluate = %+v; the solver won %d games in %d guesses", r, wins, turns)
	}
	if wins == len(words) || math.Abs(r.MeanTurns-float64(turns)/float64(wins)) > 1e-12 {
		t.Errorf("wins %d of %d (WATCH is a loss), mean %v", wins, len(words), r.MeanTurns)
	}
	for i, line := range r.Log {
		if !strings.HasPrefix(line, words[i]+": ") || strings.Contains(line, "!") || r.Repeats != 0 {
			t.Errorf("solver's game %d: %q (repeats %d); want the answer first and no inconsistent move", i, line, r.Repeats)
		}
	}
	// A player stuck on one word repeats it five times a game, each
	// repeat inconsistent with the feedback it already got.
	r, err = evaluate(context.Background(), solverPolicy{reply: reply("crane")}, prompter{tiny: true}, words[:2], 24)
	if err != nil {
		t.Fatal(err)
	}
	// CRANE vs CIGAR: C green, R and A yellow.
	wantLog := "cigar: crane(GYY..) crane(GYY..)! crane(GYY..)! crane(GYY..)! crane(GYY..)! crane(GYY..)!"
	if r.Repeats != 10 || r.Log[0] != wantLog || r.ConsistentRate != 2.0/12 {
		t.Errorf("stuck player: repeats %d, consistent %v, log %q; want 10, 2/12, %q", r.Repeats, r.ConsistentRate, r.Log[0], wantLog)
	}
	r, err = evaluate(context.Background(), solverPolicy{reply: "<think></think><guess>xyzzy</guess>"}, prompter{}, words[:2], 24)
	if err != nil {
		t.Fatal(err)
	}
	if r.Wins != 0 || r.Moves != 12 || r.Invalid != 12 || r.ValidRate != 0 || r.FormatRate != 1 {
		t.Errorf("invalid player: %+v", r)
	}
}

func TestParseWeights(t *testing.T) {
	tests := []struct {
		in      string
		want    wordle.Weights
		wantErr string
	}{
		{"0.2,0.2,0.5,0.5,1", wordle.DefaultWeights(), ""},
		{"0, 0, 1, 0, 0.5, 2", wordle.Weights{Consistent: 1, Win: 0.5, Fit: 2}, ""},
		{"1,2,3", wordle.Weights{}, "want 5 or 6"},
		{"1,2,3,4,x", wordle.Weights{}, `weight "x"`},
		{"1,2,3,4,-1", wordle.Weights{}, `weight "-1"`},
	}
	for _, tc := range tests {
		var w wordle.Weights
		err := parseWeights(&w, tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseWeights(%q) error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || w != tc.want {
			t.Errorf("parseWeights(%q) = %+v, %v; want %+v", tc.in, w, err, tc.want)
		}
	}
}

// TestWarmDir: a model saved to -warm-dir is loaded back, weight for
// weight, into a differently initialised model; an empty folder loads
// nothing.
func TestWarmDir(t *testing.T) {
	dir := t.TempDir()
	load := func(seed int64) *exkit.Setup {
		cfg := defaults()
		cfg.Out, cfg.Seed = t.TempDir(), seed
		s, err := exkit.Load("wordle", &cfg.Config, tinyModel(8, 1))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := load(1), load(2)
	if ok, err := loadWarm(b.Model, dir); ok || err != nil {
		t.Fatalf("empty folder: loaded %v, err %v", ok, err)
	}
	if err := a.Model.Save(dir); err != nil {
		t.Fatal(err)
	}
	if ok, err := loadWarm(b.Model, dir); !ok || err != nil {
		t.Fatalf("loaded %v, err %v", ok, err)
	}
	const name = "model.embed_tokens.weight"
	wa, _, err := a.Model.Weight(name)
	if err != nil {
		t.Fatal(err)
	}
	wb, _, _ := b.Model.Weight(name)
	if !slices.Equal(wa, wb) {
		t.Errorf("%s differs after loading the warm start", name)
	}
}

// TestResumeKeepsWarmReference: a resumed run skips the warm start, so the
// KL reference must come from the warm start kept in Out/warm-start, not
// from the untrained model; without that folder resuming with beta > 0 is
// an error.
func TestResumeKeepsWarmReference(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for 2 steps")
	}
	var out bytes.Buffer
	cfg := defaults()
	cfg.Steps, cfg.SFTSteps, cfg.Prompts, cfg.Generations, cfg.Eval, cfg.MaxCompletion = 1, 2, 1, 2, 1, 8
	cfg.SFTMoves, cfg.Hidden, cfg.Layers, cfg.TimeLimit = 20, 16, 1, 0
	cfg.Out, cfg.Quiet, cfg.Stdout = t.TempDir(), true, &out
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	warm := filepath.Join(cfg.Out, warmStartDir, "model.safetensors")
	if _, err := os.Stat(warm); err != nil {
		t.Fatalf("the warm start was not kept: %v", err)
	}
	cfg.Resume, cfg.Steps = true, 2
	out.Reset()
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if want := "KL reference: the warm start in"; !strings.Contains(out.String(), want) {
		t.Errorf("resumed run's output lacks %q:\n%s", want, out.String())
	}
	if err := os.Remove(warm); err != nil {
		t.Fatal(err)
	}
	cfg.Steps = 3
	if err := run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "holds no model.safetensors") {
		t.Errorf("resume without the warm start: error %v", err)
	}
}
