package model

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
)

// avx512Classes is gemm.RowClass on an AVX-512 CPU: dot kernels up to 16
// rows, strided ones up to 32, packed GEMM above.
func avx512Classes(n int) int {
	switch {
	case n <= 16:
		return 0
	case n <= 32:
		return 1
	}
	return 2
}

func TestPlanCompaction(t *testing.T) {
	liveOf := func(n int, rows ...int) []bool {
		l := make([]bool, n)
		for _, r := range rows {
			l[r] = true
		}
		return l
	}
	oneClass := func(int) int { return 0 }
	for _, tc := range []struct {
		name  string
		cur   batchLayout
		live  []bool
		rep   int
		class func(int) int
		want  batchLayout
		ok    bool
	}{
		{"half live: the live rows", identityLayout(8, 0, false), liveOf(8, 1, 4, 6, 7), 1, oneClass,
			batchLayout{rows: []int{1, 4, 6, 7}}, true},
		{"three live: three rows", identityLayout(8, 0, false), liveOf(8, 2, 3, 5), 1, oneClass,
			batchLayout{rows: []int{2, 3, 5}}, true},
		{"five of eight live: six rows, a finished one fills", identityLayout(8, 0, false), liveOf(8, 0, 1, 2, 4, 7), 1, oneClass,
			batchLayout{rows: []int{0, 1, 2, 4, 7, 3}}, true},
		{"seven of eight live: nothing", identityLayout(8, 0, false), liveOf(8, 0, 1, 2, 3, 4, 5, 6), 1, oneClass, batchLayout{}, false},
		{"five of sixteen live: six, not five", identityLayout(16, 0, false), liveOf(16, 1, 3, 5, 7, 9), 1, oneClass,
			batchLayout{rows: []int{1, 3, 5, 7, 9, 0}}, true},
		{"from a compacted batch", batchLayout{rows: []int{1, 4, 6, 7}}, liveOf(8, 6), 1, oneClass,
			batchLayout{rows: []int{6}}, true},
		{"32 rows of AVX-512: 17, the class's smallest (16 would change the sums)", identityLayout(32, 0, false), liveOf(32, 3), 1, avx512Classes,
			batchLayout{rows: append([]int{3}, append(seq(0, 3), seq(4, 17)...)...)}, true},
		{"17 rows of AVX-512: nothing", batchLayout{rows: seq(0, 17)}, liveOf(32, 3), 1, avx512Classes, batchLayout{}, false},
		{"16 rows of AVX-512: down to 2", identityLayout(16, 0, false), liveOf(16, 3, 9), 1, avx512Classes,
			batchLayout{rows: []int{3, 9}}, true},
		{"64 rows of AVX-512: 33, the class's smallest", identityLayout(64, 0, false), liveOf(64, 5), 1, avx512Classes,
			batchLayout{rows: append([]int{5}, append(seq(0, 5), seq(6, 33)...)...)}, true},
		{"groups: a dead prompt leaves, the width follows the fullest", identityLayout(12, 3, true), liveOf(12, 0, 9, 10), 1, oneClass,
			batchLayout{rows: []int{0, 1, 9, 10}, groups: []int{0, 2}}, true},
		{"groups: one live row", identityLayout(12, 3, true), liveOf(12, 6), 1, oneClass,
			batchLayout{rows: []int{6}, groups: []int{1}}, true},
		{"groups: width·rep keeps its class", identityLayout(16, 2, true), liveOf(16, 0, 8), 4, avx512Classes,
			// 8·4 = 32 query rows (class 1): width 5 is the class's smallest (20 rows).
			batchLayout{rows: []int{0, 1, 2, 3, 4, 8, 9, 10, 11, 12}, groups: []int{0, 1}}, true},
		{"groups: a dead group fills the batch to its class", identityLayout(32, 4, true), liveOf(32, 0), 2, avx512Classes,
			// The batch of 32 is class 1 (≥ 17 rows): three groups of 6.
			batchLayout{rows: append(seq(0, 6), append(seq(8, 14), seq(16, 22)...)...), groups: []int{0, 1, 2}}, true},
		{"groups: whole groups leave, the width stays", identityLayout(15, 3, true), liveOf(15, 5, 6, 7, 8, 9), 1, oneClass,
			batchLayout{rows: []int{5, 6, 7, 8, 9}, groups: []int{1}}, true},
		{"groups: several kept groups", batchLayout{rows: []int{0, 1, 2, 3, 8, 9, 10, 11}, groups: []int{0, 2}}, liveOf(16, 2, 9), 2, oneClass,
			batchLayout{rows: []int{2, 9}, groups: []int{0, 2}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := planCompaction(tc.cur, tc.live, tc.rep, tc.class)
			if ok != tc.ok || !slices.Equal(got.rows, tc.want.rows) || !slices.Equal(got.groups, tc.want.groups) {
				t.Errorf("planCompaction = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
			if !ok {
				return
			}
			for r, l := range tc.live {
				if l && !slices.Contains(got.rows, r) {
					t.Errorf("live row %d left the batch", r)
				}
			}
		})
	}
}

func seq(lo, hi int) []int {
	var s []int
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

// TestCompactionKeepsTokens generates with finished rows leaving the batch
// and with every row kept to the end, and checks that the completions are
// the same and that every row's logits are the same bits at every step it
// samples: with stop ids that end rows at scattered steps, a minimum
// length, a constraint, a repetition penalty, greedy decoding, shared or
// per-row prompt caches, and Gemma 3's sliding-window layers (ring buffers
// shorter and longer than the generation). It also checks that rows did
// leave: the batch shrank at least twice.
func TestCompactionKeepsTokens(t *testing.T) {
	stops := func(v int) []int { // about a tenth of the vocabulary
		var s []int
		for id := 7; id < v; id += 11 {
			s = append(s, id)
		}
		return s
	}
	banThirds := ConstraintFunc(func(prefix []int) []int {
		var ok []int
		for id := range 512 {
			if (id+len(prefix))%3 != 0 {
				ok = append(ok, id)
			}
		}
		return ok
	})
	// Greedy rows of a prompt are equal: a length set by the first token
	// ends the prompts' groups at different steps.
	stopByFirst := ConstraintFunc(func(prefix []int) []int {
		if len(prefix) > 0 && len(prefix) >= 3+prefix[0]%15 {
			return []int{2} // the config's EOS
		}
		return nil
	})
	for _, tc := range []struct {
		model  string
		window int // 0: the config's
		shared bool
		gen    GenerateConfig
		greedy bool // a prompt's rows are equal: whole groups leave, fewer lengths
		g      int  // 0: 5 (15 rows, within the dot kernels' class on AVX-512: gemm.RowClass)
	}{
		{"llama-tiny", 0, true, GenerateConfig{Seed: 3, MinNewTokens: 3, Sampling: Sampling{Temperature: 1}}, false, 0},
		{"llama-tiny", 0, false, GenerateConfig{Seed: 4, Sampling: Sampling{Temperature: 0.8, TopK: 40}}, false, 0},
		{"llama-tiny", 0, true, GenerateConfig{Seed: 5, Constraint: banThirds, MinNewTokens: 2, Sampling: Sampling{Temperature: 1}}, false, 0},
		{"qwen3-tiny", 0, true, GenerateConfig{Seed: 6, Sampling: Sampling{Temperature: 1, TopP: 0.9, RepetitionPenalty: 1.3}}, false, 0},
		{"qwen3-tiny", 0, true, GenerateConfig{Seed: 7, Constraint: stopByFirst, Sampling: Sampling{RepetitionPenalty: 1.5}}, true, 0},
		{"gemma3-tiny", 0, true, GenerateConfig{Seed: 8, MinNewTokens: 4, Sampling: Sampling{Temperature: 1}}, false, 0},
		{"gemma3-tiny", 3, true, GenerateConfig{Seed: 9, Constraint: banThirds, Sampling: Sampling{Temperature: 1}}, false, 0},
		{"gemma3-tiny", 50, false, GenerateConfig{Seed: 10, Sampling: Sampling{Temperature: 1, MinP: 0.05}}, false, 0},
		// 24 rows: on AVX-512 the strided kernels' class, 17 rows at the least.
		{"llama-tiny", 0, false, GenerateConfig{Seed: 11, MinNewTokens: 2, Sampling: Sampling{Temperature: 1}}, false, 8},
	} {
		name := fmt.Sprintf("%s/window=%d/shared=%v/T=%v/min=%d/constraint=%v/G=%d", tc.model, tc.window, tc.shared, tc.gen.Temperature, tc.gen.MinNewTokens, tc.gen.Constraint != nil, cmp.Or(tc.g, 5))
		t.Run(name, func(t *testing.T) {
			g := loadGolden(t, tc.model)
			prompts := goldenPrompts(g)
			G := cmp.Or(tc.g, 5)
			N := len(prompts) * G
			type run struct {
				out     []Completion
				logits  [][]float32 // step → [N·V]
				batches []int       // the batch's rows after each compaction
			}
			gen := func(compact bool) run {
				noSharedPrompt = !tc.shared
				defer func() { noSharedPrompt = false }()
				m, err := Load(g.dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.window > 0 {
					m.cfg.SlidingWindow = tc.window
				}
				var r run
				cfg := tc.gen
				cfg.MaxNewTokens, cfg.NumGenerations, cfg.KeepFinishedRows = 40, G, !compact
				if !tc.greedy {
					cfg.StopIDs = stops(m.cfg.VocabSize)
				}
				cfg.onStep = func(_ int, l []float32) { r.logits = append(r.logits, slices.Clone(l)) }
				cfg.onCompact = func(_ int, l batchLayout) {
					if tc.shared != (l.groups != nil) {
						t.Errorf("batch %+v: groups do not match shared=%v", l, tc.shared)
					}
					r.batches = append(r.batches, len(l.rows))
				}
				if r.out, err = m.Generate(context.Background(), prompts, cfg); err != nil {
					t.Fatal(err)
				}
				return r
			}
			full, compacted := gen(false), gen(true)
			if len(full.batches) != 0 {
				t.Fatalf("rows left the batch with compaction off: %v", full.batches)
			}
			shrinks, lengths := 2, 4
			if tc.greedy || N > 16 {
				shrinks, lengths = 1, 2
			}
			if len(compacted.batches) < shrinks {
				t.Fatalf("the batch shrank %d times (%v), want ≥ %d: the test does not exercise compaction", len(compacted.batches), compacted.batches, shrinks)
			}
			t.Logf("batch %d → %v", N, compacted.batches)
			if len(full.logits) != len(compacted.logits) {
				t.Fatalf("%d steps with compaction, %d without", len(compacted.logits), len(full.logits))
			}
			V := len(full.logits[0]) / N
			for i := range N {
				a, b := full.out[i], compacted.out[i]
				if !slices.Equal(a.Tokens, b.Tokens) || a.Stopped != b.Stopped {
					t.Fatalf("row %d: %v (stopped %v) with compaction, %v (stopped %v) without", i, b.Tokens, b.Stopped, a.Tokens, a.Stopped)
				}
				for s := range a.Tokens {
					x, y := full.logits[s][i*V:(i+1)*V], compacted.logits[s][i*V:(i+1)*V]
					for v := range x {
						if math.Float32bits(x[v]) != math.Float32bits(y[v]) {
							t.Fatalf("row %d step %d token %d: logit %v with compaction, %v without", i, s, v, y[v], x[v])
						}
					}
				}
			}
			seen := map[int]bool{}
			for _, c := range full.out {
				seen[len(c.Tokens)] = true
			}
			if len(seen) < lengths {
				t.Errorf("completions of only %d lengths, want ≥ %d: the stops do not scatter", len(seen), lengths)
			}
		})
	}
}
