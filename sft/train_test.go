package sft_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/sft"
)

// TestSFTTrainThenEvaluate: 60 epochs (60 steps of all 8 prompts) of supervised steps on "say <w>" →
// "<w>" with a tiny model from scratch take the greedy exact-match reward
// of Evaluate from 0 (random weights) to 1, and Release removes the SFT
// optimizer's variables.
func TestSFTTrainThenEvaluate(t *testing.T) {
	m, tok, err := model.NewTiny(t.TempDir(), append([]string{"say"}, nameWords...), model.TinyConfig{Hidden: 32, Layers: 1}, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := grpo.NewLMPolicy(m, nil, tok, &grpo.LMPolicyOptions{NoSpecialTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	var data dataset.SliceDataset
	for _, w := range nameWords {
		data = append(data, dataset.Example{Prompt: "say " + w, Answer: w})
	}
	rewards := []reward.Named{{Name: "exact", Weight: 1, Scorer: named}}
	opts := grpo.EvalOptions{MaxCompletionLength: 3}
	before, err := grpo.Evaluate(context.Background(), p, data, rewards, opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sft.DefaultConfig()
	cfg.BatchSize, cfg.MaxCompletionLength = 8, 4
	cfg.LearningRate, cfg.LRSchedulerType, cfg.Seed = 1e-2, grpo.ScheduleConstant, 1
	s, err := sft.New(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	loss, err := s.Train(context.Background(), data, sft.Options{Epochs: 60, Progress: &progress, LoggingSteps: 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	after, err := grpo.Evaluate(context.Background(), p, data, rewards, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exact %.2f → %.2f, final SFT loss %.3f\n%s", before.Reward, after.Reward, loss, progress.String())
	if before.Reward > 0.5 || after.Reward != 1 || loss > 0.1 {
		t.Errorf("exact %.2f → %.2f (final loss %.3f); want ≤ 0.5 → 1", before.Reward, after.Reward, loss)
	}
	if mean, ok := after.Mean("exact"); !ok || mean != after.Reward || len(after.Completions) != len(data) {
		t.Errorf("Mean(exact) = %v, %v; %d completions", mean, ok, len(after.Completions))
	}
	if !strings.Contains(progress.String(), "sft step 60/60") {
		t.Errorf("progress:\n%s", progress.String())
	}
	for v := range p.Context().IterVariables() {
		if strings.HasPrefix(v.Scope(), "/SFTAdamOptimizer") {
			t.Errorf("Release left %s", v.ScopeAndName())
		}
	}
}

// TestSFTWarnsOfCutTargets: targets longer than MaxCompletionLength (their
// EOS would never be learned) are one warning on Options.Logger, with the
// count, and nothing on Progress.
func TestSFTWarnsOfCutTargets(t *testing.T) {
	m, tok, err := model.NewTiny(t.TempDir(), append([]string{"say"}, nameWords...), model.TinyConfig{Hidden: 16, Layers: 1}, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := grpo.NewLMPolicy(m, nil, tok, &grpo.LMPolicyOptions{NoSpecialTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	data := dataset.SliceDataset{
		{Prompt: "say " + nameWords[0], Answer: nameWords[0]},
		{Prompt: "say " + nameWords[1], Answer: nameWords[1] + " " + nameWords[2] + " " + nameWords[3]},
	}
	cfg := sft.DefaultConfig()
	cfg.BatchSize, cfg.MaxCompletionLength = 2, 2
	s, err := sft.New(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var progress, log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	if _, err := s.Train(context.Background(), data, sft.Options{Steps: 1, Progress: &progress, Logger: logger}); err != nil {
		t.Fatal(err)
	}
	if got := log.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "level=WARN") ||
		!strings.Contains(got, "examples=1 of=2 max_completion_length=2 first=1 tokens=4") {
		t.Errorf("log:\n%s", got)
	}
	if strings.Contains(progress.String(), "max_completion_length") {
		t.Errorf("progress:\n%s", progress.String())
	}
}
