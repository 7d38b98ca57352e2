package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSamplerMatchesRowByRow checks that the sampler, with its rows split
// over goroutines, chooses the tokens of a plain row-by-row loop over
// pickWith with one random stream (what Generate did before), for several
// steps and sampling settings, finished rows and a constraint included.
func TestSamplerMatchesRowByRow(t *testing.T) {
	defer func(v int) { parallelMinLogits = v }(parallelMinLogits)
	parallelMinLogits = 1
	const rows, V, steps = 7, 300, 6
	prompts := [][]int{{1, 2, 3}, {4, 5}, {6}, {7, 8, 9, 10}}
	stops := []int{5, 17}
	for ci, cfg := range []GenerateConfig{
		{},
		{Sampling: Sampling{Temperature: 1}, Seed: 1},
		{Sampling: Sampling{Temperature: 0.7, TopK: 20}, Seed: 2},
		{Sampling: Sampling{Temperature: 1.3, TopP: 0.9, MinP: 0.01}, Seed: 3, MinNewTokens: 3},
		{Sampling: Sampling{Temperature: 1, RepetitionPenalty: 1.5}, Seed: 4, PadID: 2},
		{Sampling: Sampling{Temperature: 1}, Seed: 5, Constraint: ConstraintFunc(func(p []int) []int { return []int{5, 9, 17, 100 + len(p)} })},
	} {
		t.Run(fmt.Sprint(ci), func(t *testing.T) {
			data := rand.New(rand.NewPCG(uint64(ci), 9))
			logits := make([][]float32, steps)
			for s := range logits {
				logits[s] = make([]float32, rows*V)
				for i := range logits[s] {
					logits[s][i] = float32(3 * data.NormFloat64())
				}
			}
			g := 2
			// Reference: one row after the other.
			want := make([]Completion, rows)
			rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
			var scratch chooseScratch
			for s := range steps {
				l := slices.Clone(logits[s])
				for i := range rows {
					if want[i].Stopped {
						continue
					}
					row := l[i*V : (i+1)*V]
					if len(want[i].Tokens) < cfg.MinNewTokens {
						banStops(row, stops)
					}
					if cfg.RepetitionPenalty != 0 && cfg.RepetitionPenalty != 1 {
						penalizeRepeats(row, prompts[i/g], want[i].Tokens, cfg.RepetitionPenalty)
					}
					tok, err := pickWith(&scratch, row, want[i].Tokens, cfg, rng)
					if err != nil {
						t.Fatal(err)
					}
					want[i].Tokens = append(want[i].Tokens, tok)
					want[i].Stopped = slices.Contains(stops, tok)
				}
			}
			got := make([]Completion, rows)
			next := make([]int32, rows)
			smp := newSampler(cfg, stops, prompts, g, rows)
			stopped := 0
			for s := range steps {
				if _, err := smp.step(slices.Clone(logits[s]), got, next); err != nil {
					t.Fatal(err)
				}
				for i := range rows {
					if got[i].Stopped && next[i] != int32(cfg.PadID) && got[i].Tokens[len(got[i].Tokens)-1] != int(next[i]) {
						t.Fatalf("step %d row %d: next %d, want the pad or the stop token", s, i, next[i])
					}
				}
			}
			for i := range rows {
				if !slices.Equal(got[i].Tokens, want[i].Tokens) || got[i].Stopped != want[i].Stopped {
					t.Errorf("row %d: got %v, want %v", i, got[i], want[i])
				}
				if got[i].Stopped {
					stopped++
				}
			}
			t.Logf("%d of %d rows stopped", stopped, rows)
		})
	}
}
