package model

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// goldenPrompts returns the golden case's prompts without padding.
func goldenPrompts(g *golden) [][]int {
	var prompts [][]int
	for b, row := range g.JSON.InputIDs {
		var p []int
		for ti, id := range row {
			if g.JSON.AttentionMask[b][ti] == 1 {
				p = append(p, id)
			}
		}
		prompts = append(prompts, p)
	}
	return prompts
}

// TestSlidingCachesAreBounded checks that Gemma 3's sliding-window layers
// keep a ring buffer of sliding_window positions while the full layers keep
// the whole context (the prompt's part shared by its group, apart), through prefill and every decode step (and that the
// golden greedy ids, which run past the window, still come out).
func TestSlidingCachesAreBounded(t *testing.T) {
	g := loadGolden(t, "gemma3-tiny")
	m, err := Load(g.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := m.Config()
	prompts := goldenPrompts(g)
	const G = 2
	gen := GenerateConfig{MaxNewTokens: 12, IgnoreEOS: true, NumGenerations: G}
	S := bucket(bucket(11) + 12) // 32: the full caches' length
	checked := 0
	gen.onCaches = func(step int, caches []*tensors.Tensor) {
		if len(caches) != 2*cfg.NumHiddenLayers {
			t.Fatalf("step %d: %d caches, want %d", step, len(caches), 2*cfg.NumHiddenLayers)
		}
		for i, c := range caches {
			layer := i / 2
			want := []int{len(prompts) * G, S, cfg.NumKeyValueHeads, cfg.HeadDim}
			switch {
			case cfg.IsSlidingLayer(layer):
				want[1] = cfg.SlidingWindow
			case i%2 == 0: // the generated tokens' keys (prefixcache.go)
				want[1] = S - bucket(11)
			default: // and values, after a carry slot per query head of a kv head
				want[1] = cfg.NumAttentionHeads/cfg.NumKeyValueHeads + S - bucket(11)
			}
			if got := c.Shape().Dimensions; !slices.Equal(got, want) {
				t.Fatalf("step %d: layer %d cache shape %v, want %v", step, layer, got, want)
			}
		}
		checked++
	}
	out, err := m.Generate(context.Background(), prompts, gen)
	if err != nil {
		t.Fatal(err)
	}
	if checked != 12 {
		t.Errorf("saw the caches %d times, want 12", checked)
	}
	for i, c := range out {
		if want := g.JSON.Generate.NewTokens[i/G]; !slices.Equal(c.Tokens, want) {
			t.Errorf("completion %d: got %v, want %v", i, c.Tokens, want)
		}
	}
}

// TestSlidingWindowDecodeMatchesRecompute runs greedy generation through the
// ring-buffer caches with windows that make the prefill rotate the buffer
// (3, 5) or leave it partly empty (20 > the 16-token prompt bucket), and
// compares every step with a full forward pass over the sequence so far
// (whose window mask the golden logits verify).
func TestSlidingWindowDecodeMatchesRecompute(t *testing.T) {
	g := loadGolden(t, "gemma3-tiny")
	prompts := goldenPrompts(g)
	for _, w := range []int{3, 5, 20} {
		t.Run(fmt.Sprintf("window=%d", w), func(t *testing.T) {
			dir := copyGolden(t, "gemma3-tiny", func(s string) string {
				return strings.Replace(s, `"sliding_window": 4`, fmt.Sprintf(`"sliding_window": %d`, w), 1)
			})
			m, err := Load(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if m.Config().SlidingWindow != w {
				t.Fatalf("sliding_window = %d", m.Config().SlidingWindow)
			}
			const steps = 12
			var stepLogits [][]float32
			gen := GenerateConfig{MaxNewTokens: steps, IgnoreEOS: true}
			gen.onStep = func(_ int, l []float32) { stepLogits = append(stepLogits, slices.Clone(l)) }
			out, err := m.Generate(context.Background(), prompts, gen)
			if err != nil {
				t.Fatal(err)
			}
			V := m.Config().VocabSize
			worst := 0.0
			for b, p := range prompts {
				seq := slices.Clone(p)
				for step := range steps {
					mask := make([]int, len(seq))
					for i := range mask {
						mask[i] = 1
					}
					logits, err := m.Logits(Batch{IDs: [][]int{seq}, Mask: [][]int{mask}})
					if err != nil {
						t.Fatal(err)
					}
					last := logits[(len(seq)-1)*V : len(seq)*V]
					worst = max(worst, checkClose(t, "step_logits", stepLogits[step][b*V:(b+1)*V], last, [][]int{{1}}, V, 2e-4, 2e-4))
					best := 0
					for id, v := range last {
						if v > last[best] {
							best = id
						}
					}
					if got := out[b].Tokens[step]; got != best {
						t.Fatalf("row %d step %d: cached decode chose %d, full recompute %d", b, step, got, best)
					}
					seq = append(seq, best)
				}
			}
			t.Logf("cached vs recomputed step logits: max |diff| %.3g", worst)
		})
	}
}
