package grpo_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/tokenizer"
)

// TestCheckpointSelfContained: a checkpoint's policy folder holds the
// weights, the tokenizer files, generation_config.json and the constraint
// the policy was trained under, and loading it from those files alone
// gives the trained policy's greedy answers.
func TestCheckpointSelfContained(t *testing.T) {
	task := newNameTask(t, false, 5)
	cfg := nameConfig(3)
	cfg.OutputDir = t.TempDir()
	trainName(t, task, cfg, named)
	path, err := grpo.LatestCheckpoint(cfg.OutputDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(path, "policy")
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json", model.ConstraintFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("checkpoint policy folder lacks %s", f)
		}
	}
	m, err := model.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := model.LoadConstraint(dir)
	if err != nil || c == nil {
		t.Fatalf("constraint %v, %v", c, err)
	}
	back, err := grpo.NewLMPolicy(m, nil, tok, &grpo.LMPolicyOptions{Constraint: c, NoSpecialTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	opts := grpo.EvalOptions{MaxCompletionLength: 4}
	want, err := grpo.Evaluate(context.Background(), task.policy, task.data, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := grpo.Evaluate(context.Background(), back, task.data, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Completions, want.Completions) {
		t.Errorf("reloaded policy answers %q, trained one %q", got.Completions, want.Completions)
	}
	for _, c := range got.Completions {
		if !slices.Contains(nameWords, c) {
			t.Errorf("reloaded policy answered %q, outside its constraint", c)
		}
	}
}
