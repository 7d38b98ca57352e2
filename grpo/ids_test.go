package grpo_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/grpo/grpotest"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
)

// idsPolicy is an LMPolicy without a tokenizer over a tiny random Llama
// whose EOS ids are every even id (so free sampling stops early).
func idsPolicy(t *testing.T) *grpo.LMPolicy {
	t.Helper()
	var eos []int
	for id := 0; id < 64; id += 2 {
		eos = append(eos, id)
	}
	cfg := model.Config{
		ModelType: "llama", VocabSize: 64, HiddenSize: 32, IntermediateSize: 64,
		NumHiddenLayers: 1, NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 16, MaxPositionEmbeddings: 64,
		RMSNormEps: 1e-5, RopeTheta: 10000, TieWordEmbeddings: true, HiddenAct: "silu",
		BOSTokenID: -1, EOSTokenIDs: eos,
	}
	m, err := model.New(cfg, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := grpo.NewLMPolicy(m, nil, nil, &grpo.LMPolicyOptions{NoReference: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLMPolicyPromptIDsWithoutTokenizer(t *testing.T) {
	p := idsPolicy(t)
	prompts := []dataset.Example{{PromptIDs: []int{5, 7, 9, 11}}, {PromptIDs: []int{13, 15}}}
	opts := grpo.GenerateOptions{MaxPromptLength: 3, MaxCompletionLength: 6, Sampling: model.Sampling{Temperature: 1, TopP: 1}, Seed: 1}

	free, err := p.Generate(context.Background(), prompts, 4, opts)
	if err != nil {
		t.Fatal(err)
	}
	early := 0
	for _, c := range free {
		if !c.Truncated {
			early++
		}
	}
	if early == 0 {
		t.Fatalf("no completion ended at an EOS id although half the vocabulary is EOS")
	}

	opts.MinCompletionLength = opts.MaxCompletionLength
	forced, err := p.Generate(context.Background(), prompts, 4, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(forced) != 8 {
		t.Fatalf("got %d completions, want 8", len(forced))
	}
	wantPrompt := [][]int32{{7, 9, 11}, {13, 15}} // the last MaxPromptLength ids
	for i, c := range forced {
		if !slices.Equal(c.PromptIDs, wantPrompt[i/4]) {
			t.Errorf("completion %d: prompt ids %v, want %v", i, c.PromptIDs, wantPrompt[i/4])
		}
		if len(c.IDs) != 6 || !c.Truncated || c.Text != "" {
			t.Errorf("completion %d: %d ids (truncated %v, text %q), want 6 forced ids and no text", i, len(c.IDs), c.Truncated, c.Text)
		}
		for _, id := range c.IDs {
			if id%2 == 0 {
				t.Errorf("completion %d sampled EOS id %d before MinCompletionLength: %v", i, id, c.IDs)
			}
		}
	}

	if _, err := p.Generate(context.Background(), []dataset.Example{{Prompt: "text"}}, 2, opts); err == nil || !strings.Contains(err.Error(), "PromptIDs") {
		t.Errorf("text prompt without a tokenizer: err = %v, want one pointing to PromptIDs", err)
	}
}

// TestTrainerWithPromptIDs trains full fine-tuning steps on token-id
// prompts with forced completion lengths through the public Trainer.
func TestTrainerWithPromptIDs(t *testing.T) {
	p := idsPolicy(t)
	cfg := grpo.DefaultConfig()
	cfg.NumGenerations, cfg.BatchSize = 4, 8
	cfg.MaxCompletionLength, cfg.MinCompletionLength = 3, 3
	cfg.MaxSteps, cfg.LoggingSteps = 2, 0
	data := dataset.SliceDataset{{PromptIDs: []int{1, 3, 5}}, {PromptIDs: []int{7, 9}}}
	n := 0
	counter := reward.Func(func(_, _, _ string) float64 { n++; return float64(n % 3) })
	ms := trainOn(t, p, cfg, data, reward.Named{Name: "counter", Weight: 1, Scorer: counter})
	for _, m := range ms {
		if m["completions/mean_length"] != 3 || m["completions/clipped_ratio"] != 1 {
			t.Errorf("step %v: mean length %v, clipped %v; want 3 forced tokens everywhere", m["step"], m["completions/mean_length"], m["completions/clipped_ratio"])
		}
	}
}

func TestConfigMinCompletionLength(t *testing.T) {
	cfg := grpo.DefaultConfig()
	for _, v := range []int{-1, cfg.MaxCompletionLength + 1} {
		cfg.MinCompletionLength = v
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "MinCompletionLength") {
			t.Errorf("MinCompletionLength %d: err = %v", v, err)
		}
	}
	cfg.MinCompletionLength = cfg.MaxCompletionLength
	if err := cfg.Validate(); err != nil {
		t.Errorf("MinCompletionLength = MaxCompletionLength: %v", err)
	}
}

// slowPolicy takes a known time to generate.
type slowPolicy struct {
	*grpotest.Policy
	delay time.Duration
}

func (p slowPolicy) Generate(ctx context.Context, prompts []dataset.Example, n int, opts grpo.GenerateOptions) ([]grpo.Completion, error) {
	time.Sleep(p.delay)
	return p.Policy.Generate(ctx, prompts, n, opts)
}

// TestTimingMetricsSplitGeneration checks that timing/generate and
// timing/reward each cover their part of the rollout phase and no more
// (together within generate_time), and are 0 on steps that reuse rollouts.
func TestTimingMetricsSplitGeneration(t *testing.T) {
	const genDelay, rewardDelay = 60 * time.Millisecond, 20 * time.Millisecond
	p := slowPolicy{newPolicy(t), genDelay}
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.NumIterations = 4, 2
	slow := reward.Func(func(p, c, a string) float64 { time.Sleep(rewardDelay); return exact(p, c, a) })
	ms := trainOn(t, p, cfg, sayDataset(), reward.Named{Name: "exact", Weight: 1, Scorer: slow})
	for i, m := range ms {
		gen, rew, lp := m["timing/generate"], m["timing/reward"], m["timing/logprobs"]
		if i%2 == 1 {
			if gen != 0 || rew != 0 || lp != 0 {
				t.Errorf("step %d reuses rollouts but reports timing %v %v %v", i+1, gen, rew, lp)
			}
			continue
		}
		if gen < genDelay.Seconds() || rew < rewardDelay.Seconds() || lp <= 0 {
			t.Errorf("step %d: timing/generate %.3f (≥ %v), timing/reward %.3f (≥ %v), timing/logprobs %.3f (> 0)",
				i+1, gen, genDelay, rew, rewardDelay, lp)
		}
		if sum := gen + rew + lp; sum > m["generate_time"]+1e-6 {
			t.Errorf("step %d: parts sum to %.3f s, more than generate_time %.3f s", i+1, sum, m["generate_time"])
		}
	}
}
