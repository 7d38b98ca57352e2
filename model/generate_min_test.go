package model

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestMinNewTokensBansStopsUntilReached checks HF's min_new_tokens: before
// the minimum, the stop ids are out of the choice (greedy then takes the
// best other token, read from the raw logits), after it they stop again.
func TestMinNewTokensBansStopsUntilReached(t *testing.T) {
	m := tinyModel(t)
	prompt := [][]int{{1, 116, 275, 56}}
	var first []float32
	free, err := m.Generate(context.Background(), prompt, GenerateConfig{MaxNewTokens: 4, IgnoreEOS: true,
		onStep: func(step int, logits []float32) {
			if step == 0 {
				first = slices.Clone(logits)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	stop := free[0].Tokens[0]
	// The oracle: the best token of the first step's raw logits but stop.
	want := -1
	for id, l := range first {
		if id != stop && (want < 0 || l > first[want]) {
			want = id
		}
	}

	stopped, err := m.Generate(context.Background(), prompt, GenerateConfig{MaxNewTokens: 4, IgnoreEOS: true, StopIDs: []int{stop}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stopped[0].Tokens, []int{stop}) || !stopped[0].Stopped {
		t.Fatalf("without a minimum: got %+v, want [%d] stopped", stopped[0], stop)
	}
	forced, err := m.Generate(context.Background(), prompt, GenerateConfig{MaxNewTokens: 4, IgnoreEOS: true, StopIDs: []int{stop}, MinNewTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := forced[0].Tokens; len(got) == 0 || got[0] != want {
		t.Fatalf("MinNewTokens 1: first token %v, want %d (best after the banned stop %d)", got, want, stop)
	}
	if slices.Contains(forced[0].Tokens[:1], stop) {
		t.Errorf("stop id %d chosen before the minimum: %v", stop, forced[0].Tokens)
	}
}

// TestMinNewTokensForcesLength samples with half the vocabulary as stop
// ids: without a minimum completions end early, with MinNewTokens =
// MaxNewTokens every one has exactly MaxNewTokens tokens and no stop id.
func TestMinNewTokensForcesLength(t *testing.T) {
	m := tinyModel(t)
	var stops []int
	for id := 0; id < m.Config().VocabSize; id += 2 {
		stops = append(stops, id)
	}
	cfg := GenerateConfig{MaxNewTokens: 6, NumGenerations: 4, Sampling: Sampling{Temperature: 1}, Seed: 7, StopIDs: stops}
	out, err := m.Generate(context.Background(), [][]int{{1, 5, 9}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	short := 0
	for _, c := range out {
		if len(c.Tokens) < cfg.MaxNewTokens {
			short++
		}
	}
	if short == 0 {
		t.Fatalf("no completion stopped early with half the vocabulary as stops: %v", out)
	}
	cfg.MinNewTokens = cfg.MaxNewTokens
	out, err = m.Generate(context.Background(), [][]int{{1, 5, 9}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range out {
		if len(c.Tokens) != cfg.MaxNewTokens || c.Stopped {
			t.Errorf("completion %d: %d tokens (stopped %v), want %d", i, len(c.Tokens), c.Stopped, cfg.MaxNewTokens)
		}
		for _, id := range c.Tokens {
			if id%2 == 0 {
				t.Errorf("completion %d has stop id %d: %v", i, id, c.Tokens)
			}
		}
	}
}

func TestMinNewTokensValidated(t *testing.T) {
	m := tinyModel(t)
	for _, min := range []int{-1, 5} {
		_, err := m.Generate(context.Background(), [][]int{{1, 5}}, GenerateConfig{MaxNewTokens: 4, MinNewTokens: min})
		if err == nil || !strings.Contains(err.Error(), "MinNewTokens") {
			t.Errorf("MinNewTokens %d: err = %v, want one naming MinNewTokens", min, err)
		}
	}
}
