package model

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestGoldenGreedyGeneration checks greedy KV-cache generation against HF's
// step logits and ids, one completion per prompt and three (G rows sharing
// their prompt's cache, prefixcache.go).
func TestGoldenGreedyGeneration(t *testing.T) {
	for _, name := range goldenCases {
		for _, G := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/G=%d", name, G), func(t *testing.T) {
				g := loadGolden(t, name)
				m, err := Load(g.dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				prompts := goldenPrompts(g)
				want := g.tensors["generate.step_logits"] // [3, 12, V]
				V := want.Shape[2]
				steps := want.Shape[1]
				cfg := GenerateConfig{MaxNewTokens: g.JSON.Generate.MaxNewTokens, IgnoreEOS: true, NumGenerations: G}
				worst := 0.0
				cfg.onStep = func(step int, logits []float32) {
					for i := range len(prompts) * G {
						b := i / G
						w := want.Data[(b*steps+step)*V : (b*steps+step+1)*V]
						worst = max(worst, checkClose(t, "step_logits", logits[i*V:(i+1)*V], w, [][]int{{1}}, V, 2e-4, 2e-4))
					}
				}
				defer func() { t.Logf("step_logits: max |diff| %.3g over %d steps", worst, steps) }()
				out, err := m.Generate(context.Background(), prompts, cfg)
				if err != nil {
					t.Fatal(err)
				}
				for i, c := range out {
					if !slices.Equal(c.Tokens, g.JSON.Generate.NewTokens[i/G]) {
						t.Errorf("row %d: got %v, want %v", i, c.Tokens, g.JSON.Generate.NewTokens[i/G])
					}
				}
			})
		}
	}
}

func tinyModel(t testing.TB) *Model {
	t.Helper()
	g := loadGolden(t, "llama-tiny")
	m, err := Load(g.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGenerateManyShapes runs more distinct batch shapes than GoMLX's
// default executor cache holds (32), as a multi-turn Env does: a full
// cache must not fail generation.
func TestGenerateManyShapes(t *testing.T) {
	m := tinyModel(t)
	for rows := 1; rows <= 40; rows++ {
		prompts := make([][]int, rows)
		for i := range prompts {
			prompts[i] = []int{1, 5 + i%7, 9}
		}
		out, err := m.Generate(context.Background(), prompts, GenerateConfig{MaxNewTokens: 2, IgnoreEOS: true})
		if err != nil {
			t.Fatalf("%d rows: %v", rows, err)
		}
		if len(out) != rows {
			t.Fatalf("%d rows: got %d completions", rows, len(out))
		}
	}
}

func TestGenerateGroupsShareThePrompt(t *testing.T) {
	m := tinyModel(t)
	prompts := [][]int{{1, 116, 275, 56}, {1, 98}}
	one, err := m.Generate(context.Background(), prompts, GenerateConfig{MaxNewTokens: 5, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	three, err := m.Generate(context.Background(), prompts, GenerateConfig{MaxNewTokens: 5, IgnoreEOS: true, NumGenerations: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(three) != 6 {
		t.Fatalf("got %d completions, want 6", len(three))
	}
	for i, c := range three {
		if !slices.Equal(c.Tokens, one[i/3].Tokens) {
			t.Errorf("greedy completion %d = %v, want %v", i, c.Tokens, one[i/3].Tokens)
		}
	}
}

func TestGenerateSamplingIsSeeded(t *testing.T) {
	m := tinyModel(t)
	cfg := GenerateConfig{MaxNewTokens: 8, NumGenerations: 4, Sampling: Sampling{Temperature: 1, TopK: 50, TopP: 0.95}, Seed: 42, IgnoreEOS: true}
	run := func(seed uint64) []Completion {
		cfg.Seed = seed
		out, err := m.Generate(context.Background(), [][]int{{1, 5, 9}}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b, c := run(42), run(42), run(43)
	distinct := map[string]bool{}
	for i := range a {
		if !slices.Equal(a[i].Tokens, b[i].Tokens) {
			t.Errorf("same seed, completion %d differs: %v vs %v", i, a[i].Tokens, b[i].Tokens)
		}
		distinct[fmtTokens(a[i].Tokens)] = true
	}
	if len(distinct) < 2 {
		t.Errorf("4 samples at temperature 1 are all equal: %v", a)
	}
	same := true
	for i := range a {
		same = same && slices.Equal(a[i].Tokens, c[i].Tokens)
	}
	if same {
		t.Error("seeds 42 and 43 gave identical samples")
	}
}

func fmtTokens(ts []int) string {
	b := make([]byte, 0, 4*len(ts))
	for _, t := range ts {
		b = append(b, byte(t), byte(t>>8), ',')
	}
	return string(b)
}

func TestGenerateTrieConstraint(t *testing.T) {
	m := tinyModel(t)
	labels := [][]int{{10, 11}, {10, 12, 13}, {20}}
	const eos = 2
	trie := NewTrie(labels, eos)
	out, err := m.Generate(context.Background(), [][]int{{1, 4}, {1, 7, 8}}, GenerateConfig{
		MaxNewTokens: 6, NumGenerations: 8, Sampling: Sampling{Temperature: 1.5}, Seed: 1, Constraint: trie,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range out {
		if !c.Stopped || c.Tokens[len(c.Tokens)-1] != eos {
			t.Errorf("completion %d = %v does not end with EOS", i, c.Tokens)
			continue
		}
		body := c.Tokens[:len(c.Tokens)-1]
		if !slices.ContainsFunc(labels, func(l []int) bool { return slices.Equal(l, body) }) {
			t.Errorf("completion %d = %v is not a label + EOS", i, c.Tokens)
		}
	}
}

func TestTrieAllowed(t *testing.T) {
	trie := NewTrie([][]int{{10, 11}, {10, 12, 13}, {20}}, 2)
	for _, tc := range []struct {
		prefix, want []int
	}{
		{nil, []int{10, 20}},
		{[]int{10}, []int{11, 12}},
		{[]int{10, 11}, []int{2}},
		{[]int{20}, []int{2}},
		{[]int{10, 12}, []int{13}},
		{[]int{99}, []int{2}},
	} {
		if got := trie.Allowed(tc.prefix); !slices.Equal(got, tc.want) {
			t.Errorf("Allowed(%v) = %v, want %v", tc.prefix, got, tc.want)
		}
	}
}

func TestGenerateStopsAtStopID(t *testing.T) {
	m := tinyModel(t)
	// Force token 7 then 9 (a stop id) with a constraint; the completion ends there.
	c := ConstraintFunc(func(prefix []int) []int {
		if len(prefix) == 0 {
			return []int{7}
		}
		return []int{9}
	})
	out, err := m.Generate(context.Background(), [][]int{{1, 3}}, GenerateConfig{MaxNewTokens: 10, StopIDs: []int{9}, Constraint: c})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out[0].Tokens, []int{7, 9}) || !out[0].Stopped {
		t.Fatalf("got %+v, want [7 9] stopped", out[0])
	}
}

func TestGenerateErrors(t *testing.T) {
	m := tinyModel(t)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		prompts [][]int
		cfg     GenerateConfig
		want    string
	}{
		{"no prompts", context.Background(), nil, GenerateConfig{MaxNewTokens: 1}, "model: generate: no prompts"},
		{"no max tokens", context.Background(), [][]int{{1}}, GenerateConfig{}, "MaxNewTokens = 0, want > 0"},
		{"prompt too long", context.Background(), [][]int{make([]int, 250)}, GenerateConfig{MaxNewTokens: 10},
			"model: prompt too long: prompt 0 has 250 tokens + 10 new > max_position_embeddings 256"},
		{"bad token", context.Background(), [][]int{{1, 9999}}, GenerateConfig{MaxNewTokens: 1}, "token id 9999 outside the vocabulary (512)"},
		{"empty prompt", context.Background(), [][]int{{}}, GenerateConfig{MaxNewTokens: 1}, "prompt 0 is empty"},
		{"empty constraint", context.Background(), [][]int{{1}}, GenerateConfig{MaxNewTokens: 2,
			Constraint: ConstraintFunc(func([]int) []int { return []int{} })}, "constraint allows no token"},
		{"canceled", canceled, [][]int{{1}}, GenerateConfig{MaxNewTokens: 3}, "context canceled"},
		{"negative temperature", context.Background(), [][]int{{1}}, GenerateConfig{MaxNewTokens: 1, Sampling: Sampling{Temperature: -1}},
			"model: generate: Temperature = -1, want finite ≥ 0 (0: greedy)"},
		{"NaN temperature", context.Background(), [][]int{{1}}, GenerateConfig{MaxNewTokens: 1, Sampling: Sampling{Temperature: math.NaN()}},
			"Temperature = NaN"},
		{"NaN top-p", context.Background(), [][]int{{1}}, GenerateConfig{MaxNewTokens: 1, Sampling: Sampling{Temperature: 1, TopP: math.NaN()}},
			"TopP = NaN, want 0…1"},
		{"min-p above 1", context.Background(), [][]int{{1}}, GenerateConfig{MaxNewTokens: 1, Sampling: Sampling{Temperature: 1, MinP: 2}},
			"MinP = 2, want 0…1"},
		{"negative top-k", context.Background(), [][]int{{1}}, GenerateConfig{MaxNewTokens: 1, Sampling: Sampling{TopK: -3}}, "TopK = -3, want ≥ 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Generate(tc.ctx, tc.prompts, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
			t.Log(err)
		})
	}
}

func TestPickSampling(t *testing.T) {
	logits := []float32{0, 3, 1, 2, -1}
	rng := rand.New(rand.NewPCG(1, 2))
	count := map[int]int{}
	for range 2000 {
		id, err := pick(logits, nil, GenerateConfig{Sampling: Sampling{Temperature: 1, TopK: 2}}, rng)
		if err != nil {
			t.Fatal(err)
		}
		count[id]++
	}
	// Top-2 are ids 1 and 3 with p ∝ e^3, e^2: 0.731 / 0.269.
	if len(count) != 2 || count[1] < 1350 || count[1] > 1570 {
		t.Errorf("top-k counts %v", count)
	}
	clear(count)
	for range 2000 {
		id, _ := pick(logits, nil, GenerateConfig{Sampling: Sampling{Temperature: 1, TopP: 0.6}}, rng)
		count[id]++
	}
	if len(count) != 1 || count[1] != 2000 { // p(1) = 0.64 ≥ 0.6 alone
		t.Errorf("top-p counts %v", count)
	}
	if id, _ := pick(logits, nil, GenerateConfig{}, rng); id != 1 {
		t.Errorf("greedy = %d", id)
	}
	if id, _ := pick(logits, nil, GenerateConfig{Constraint: ConstraintFunc(func([]int) []int { return []int{0, 4} })}, rng); id != 0 {
		t.Errorf("constrained greedy = %d", id)
	}
}
