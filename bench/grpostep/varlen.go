package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/model"
)

// The varlen variant: completions that end at a fixed, GSM8K-like spread of
// lengths. With random weights a model would never stop by itself, so row
// j of example e is made to stop after scheduledLength(e, j) tokens (its
// last one EOS), the same schedule as bench/torch_grpostep.py's, and the
// two sides sample, score and train on the same numbers of tokens.

// scheduledLength is the length (EOS included) of completion j of example
// e: 16 + ⌊240·u^1.5⌋ for u uniform in [0, 1) from splitmix64(1000·e + j),
// between 16 and 255 tokens, median 101, mean about 112 (GSM8K answers of
// small instruction models run from a few dozen tokens to a few hundred).
func scheduledLength(e, j int) int {
	u := float64(splitmix64(uint64(1000*e+j))>>11) / (1 << 53)
	return 16 + int(240*u*math.Sqrt(u))
}

// splitmix64 is Steele, Lea and Flood's mixing function (Java's
// SplittableRandom), as bench/torch_grpostep.py writes it.
func splitmix64(x uint64) uint64 {
	z := x + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// schedPolicy is an LMPolicy whose completions stop on the schedule: its
// Generate samples as LMPolicy's does (temperature, seed), with every
// token but EOS allowed until a row's scheduled length, then only EOS.
// Examples carry their index in Answer. The constraint is the sampler's
// only; training sees none, as in the PyTorch twin.
type schedPolicy struct {
	*grpo.LMPolicy
	m      *model.Model
	keep   bool  // model.GenerateConfig.KeepFinishedRows
	tokens []int // completion tokens of each Generate call
}

// Generate implements grpo.Policy.
func (p *schedPolicy) Generate(ctx context.Context, prompts []dataset.Example, n int, opts grpo.GenerateOptions) ([]grpo.Completion, error) {
	ids := make([][]int, len(prompts))
	want := make([]int, 0, len(prompts)*n)
	for i, ex := range prompts {
		var err error
		if ids[i], err = p.PromptIDs(ex, opts.MaxPromptLength); err != nil {
			return nil, err
		}
		e, err := strconv.Atoi(ex.Answer)
		if err != nil {
			return nil, fmt.Errorf("varlen: example %d: answer %q is not its index", i, ex.Answer)
		}
		for j := range n {
			want = append(want, min(scheduledLength(e, j), opts.MaxCompletionLength))
		}
	}
	eos := p.m.Config().EOSTokenIDs[0]
	topP := opts.TopP
	if topP >= 1 {
		topP = 0
	}
	gen, err := p.m.Generate(ctx, ids, model.GenerateConfig{
		MaxNewTokens: opts.MaxCompletionLength, NumGenerations: n,
		Sampling: model.Sampling{Temperature: opts.Temperature, TopK: opts.TopK, TopP: topP, MinP: opts.MinP,
			RepetitionPenalty: opts.RepetitionPenalty},
		Seed:             opts.Seed,
		Constraint:       newStopSchedule(want, eos, p.m.Config().VocabSize),
		KeepFinishedRows: p.keep,
	})
	if err != nil {
		return nil, err
	}
	out := make([]grpo.Completion, len(gen))
	total := 0
	for i, c := range gen {
		if len(c.Tokens) != want[i] {
			return nil, fmt.Errorf("varlen: completion %d has %d tokens, the schedule says %d", i, len(c.Tokens), want[i])
		}
		total += len(c.Tokens)
		out[i] = grpo.Completion{PromptIDs: toInt32(ids[i/n]), IDs: toInt32(c.Tokens), Truncated: !c.Stopped}
	}
	p.tokens = append(p.tokens, total)
	return out, nil
}

// stopSchedule is the constraint of one Generate call: row i may not end
// before lengths[i] tokens and must end then. A constraint sees only a
// row's tokens, so it tells rows apart by the order the sampler asks in:
// at each step once per unfinished row, in row order; the rows unfinished
// after t tokens are those scheduled longer than t. (Generate's check of
// every length catches a sampler that asks otherwise.)
type stopSchedule struct {
	lengths []int
	asked   map[int]int // tokens so far → rows asked at that length
	eos     []int
	notEOS  []int
}

func newStopSchedule(lengths []int, eos, vocab int) *stopSchedule {
	s := &stopSchedule{lengths: lengths, asked: map[int]int{}, eos: []int{eos}}
	for id := range vocab {
		if id != eos {
			s.notEOS = append(s.notEOS, id)
		}
	}
	return s
}

// Allowed implements model.Constraint.
func (s *stopSchedule) Allowed(prefix []int) []int {
	t := len(prefix)
	k := s.asked[t]
	s.asked[t] = k + 1
	for _, n := range s.lengths {
		if n <= t {
			continue
		}
		if k == 0 {
			if n == t+1 {
				return s.eos
			}
			break
		}
		k--
	}
	return s.notEOS
}

func toInt32(xs []int) []int32 {
	out := make([]int32, len(xs))
	for i, x := range xs {
		out[i] = int32(x)
	}
	return out
}

// compareCompaction times one generation of examples' completions with
// finished rows dropped from the decode batch and one with them kept, and
// checks that both give the same tokens.
func compareCompaction(w io.Writer, p *schedPolicy, examples []dataset.Example, v variant) error {
	opts := grpo.GenerateOptions{MaxPromptLength: v.promptLen, MaxCompletionLength: v.newTokens, Sampling: model.Sampling{Temperature: 1}, Seed: 1}
	gen := func(keep bool) ([]grpo.Completion, float64, float64, error) {
		p.keep = keep
		defer func() { p.keep = false }()
		t0, c0 := time.Now(), cpuTime()
		out, err := p.Generate(context.Background(), examples, v.g, opts)
		return out, time.Since(t0).Seconds(), cpuTime() - c0, err
	}
	dropped, td, cd, err := gen(false)
	if err != nil {
		return err
	}
	kept, tk, ck, err := gen(true)
	if err != nil {
		return err
	}
	tokens, longest := 0, 0
	for i := range dropped {
		if !slices.Equal(dropped[i].IDs, kept[i].IDs) {
			return fmt.Errorf("varlen: completion %d differs with finished rows kept", i)
		}
		tokens += len(dropped[i].IDs)
		longest = max(longest, len(dropped[i].IDs))
	}
	fmt.Fprintf(w, "generation of %d completions (%d tokens, the longest %d): finished rows dropped %.2f s, kept %.2f s: %.2f× (same tokens; CPU s, all threads: %.2f and %.2f, %.2f×)\n",
		len(dropped), tokens, longest, td, tk, tk/td, cd, ck, ck/cd)
	return nil
}
