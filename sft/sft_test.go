package sft_test

import (
	"context"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/sft"
)

// TestSFTLearns: supervised steps on "say cat" → "cat <eos>" drive the
// completion-token cross-entropy down from ~log V to the bigram model's
// floor: row "cat" must give both "cat" (after "say cat") and EOS (after
// the answer "cat"), so the best mean loss is log 2 ≈ 0.69.
func TestSFTLearns(t *testing.T) {
	p := newPolicy(t)
	cfg := smallConfig(t)
	cfg.LearningRate = 0.05
	s, err := sft.New(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var batch []sft.Pair
	for _, ex := range sayDataset() {
		batch = append(batch, sft.Pair{PromptIDs: p.Encode(ex.Prompt), CompletionIDs: append(p.Encode(ex.Answer), 1)})
	}
	var first, last float64
	for i := 0; i < 150; i++ {
		loss, err := s.Step(context.Background(), batch, 150)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = loss
		}
		last = loss
	}
	t.Logf("SFT loss %.3f → %.3f", first, last)
	if first < 1.5 || last > 0.72 {
		t.Errorf("SFT loss %.3f → %.3f; want ≈ log 7 → < 0.72 (floor log 2)", first, last)
	}
	if _, err := s.Step(context.Background(), []sft.Pair{{PromptIDs: []int32{3}}}, 60); err == nil {
		t.Error("empty completion accepted")
	}
}

// TestSFTStateApartFromGRPO: a warm start must not leave optimizer state
// where GRPO's AdamW looks for its own, or GRPO would resume from the SFT
// moments and step count (and leave them out of its checkpoints).
func TestSFTStateApartFromGRPO(t *testing.T) {
	p := newPolicy(t)
	cfg := smallConfig(t)
	s, err := sft.New(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex := sayDataset()[0]
	pair := sft.Pair{PromptIDs: p.Encode(ex.Prompt), CompletionIDs: append(p.Encode(ex.Answer), 1)}
	if _, err := s.Step(context.Background(), []sft.Pair{pair}, 1); err != nil {
		t.Fatal(err)
	}
	var sftVars int
	for v := range p.Context().IterVariables() {
		switch {
		case strings.HasPrefix(v.Scope(), "/AdamOptimizer"):
			t.Errorf("SFT wrote %s into GRPO's optimizer scope", v.ScopeAndName())
		case strings.HasPrefix(v.Scope(), "/SFTAdamOptimizer"):
			sftVars++
		}
	}
	if sftVars == 0 {
		t.Error("no SFT optimizer state under /SFTAdamOptimizer")
	}
}
