package model

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

func TestPromptBucket(t *testing.T) {
	for _, c := range []struct{ n, maxNew, want int }{
		{7, 6, 16}, {33, 6, 40}, {80, 6, 80}, {81, 6, 96}, {161, 200, 192}, {200, 6, 224},
		// The power of two's cache would pass 640 slots: it stays.
		{300, 6, 512}, {100, 500, 128}, {100, 380, 112},
	} {
		if got := promptBucket(c.n, c.maxNew); got != c.want {
			t.Errorf("promptBucket(%d, %d) = %d, want %d", c.n, c.maxNew, got, c.want)
		}
	}
}

// TestPromptBucketKeepsBits generates from prompts padded to the finer
// prompt bucket and to the power of two before it: every step's logits,
// every token and log-prob must be the same bits, since the extra left
// padding is masked out and contributes exact zeros (promptBucket keeps
// the power of two where that would not hold). The SmolLM2 shape
// (two of its layers, random weights) puts the products on the kernels a
// real model uses.
func TestPromptBucketKeepsBits(t *testing.T) {
	smol := SmolLM2Shaped()
	smol.NumHiddenLayers = 2
	type subject struct {
		name string
		load func(t *testing.T) *Model
	}
	subjects := []subject{{"smollm2-2-layers", func(t *testing.T) *Model {
		m, err := New(smol, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}}}
	for _, name := range goldenCases {
		subjects = append(subjects, subject{name, func(t *testing.T) *Model {
			m, err := Load(loadGolden(t, name).dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}})
	}
	// Longest prompts whose buckets differ: 80 → 80 against 128, 161 → 192
	// against 256, 40 → 40 against 64, 200 → 224 against 256.
	lengths := [][]int{{80, 33}, {161, 7, 120}, {40}, {200, 12}}
	const newTokens = 6
	for _, s := range subjects {
		t.Run(s.name, func(t *testing.T) {
			m := s.load(t)
			vocab := m.Config().VocabSize
			for _, ls := range lengths {
				prompts := make([][]int, len(ls))
				for i, n := range ls {
					for p := range n {
						prompts[i] = append(prompts[i], 1+(i*131+p*17)%(vocab-1))
					}
				}
				if promptBucket(ls[0], newTokens) == bucket(ls[0]) {
					t.Fatalf("prompt of %d: both buckets are %d; the case tests nothing", ls[0], bucket(ls[0]))
				}
				t.Run(fmt.Sprint(ls), func(t *testing.T) {
					run := func(powerOfTwo bool) ([]Completion, [][]float32) {
						defer func(p bool) { powerOfTwoPrompts = p }(powerOfTwoPrompts)
						powerOfTwoPrompts = powerOfTwo
						var steps [][]float32
						cfg := GenerateConfig{MaxNewTokens: newTokens, IgnoreEOS: true, NumGenerations: 2, LogProbs: true,
							Sampling: Sampling{Temperature: 1}, Seed: 7}
						cfg.onStep = func(_ int, logits []float32) { steps = append(steps, slices.Clone(logits)) }
						out, err := m.Generate(context.Background(), prompts, cfg)
						if err != nil {
							t.Fatal(err)
						}
						return out, steps
					}
					fine, fineSteps := run(false)
					coarse, coarseSteps := run(true)
					for i := range coarse {
						if !slices.Equal(fine[i].Tokens, coarse[i].Tokens) {
							t.Errorf("row %d: tokens %v, with the power-of-two bucket %v", i, fine[i].Tokens, coarse[i].Tokens)
						}
						if !sameBits(fine[i].LogProbs, coarse[i].LogProbs) {
							t.Errorf("row %d: log-probs %v, with the power-of-two bucket %v", i, fine[i].LogProbs, coarse[i].LogProbs)
						}
					}
					if len(fineSteps) != len(coarseSteps) {
						t.Fatalf("%d steps, with the power-of-two bucket %d", len(fineSteps), len(coarseSteps))
					}
					for s := range coarseSteps {
						if !sameBits(fineSteps[s], coarseSteps[s]) {
							t.Errorf("step %d: logits differ from the power-of-two bucket's", s)
						}
					}
				})
			}
		})
	}
}
