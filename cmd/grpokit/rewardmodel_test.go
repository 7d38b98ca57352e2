package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/tokenizer"
)

// TestRewardModelReward builds a "reward_model" reward from a tiny
// reward model (reward/rewardmodel's golden qwen3 checkpoint with its
// tokenizer) and checks its score of a plain sample against the golden
// float64 reference, and the errors of bad specs.
func TestRewardModelReward(t *testing.T) {
	src := filepath.Join("..", "..", "reward", "rewardmodel", "testdata")
	dir := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(src, "qwen3-seqcls", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := tokenizer.WriteTinyDir(dir, nil); err != nil {
		t.Fatal(err)
	}
	var g struct {
		Samples []struct {
			Prompt, Completion string
		} `json:"samples"`
		Families map[string]struct {
			Samples []struct {
				Score float64 `json:"score"`
			} `json:"samples"`
		} `json:"families"`
	}
	b, err := os.ReadFile(filepath.Join(src, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	rs, err := buildRewards([]rewardSpec{{Type: "reward_model", Name: "rm", Path: dir}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rs[0].Scorer.(reward.BatchScorer); !ok || rs[0].Name != "rm" {
		t.Fatalf("reward %q is %T, want a BatchScorer", rs[0].Name, rs[0].Scorer)
	}
	s := g.Samples[0]
	got := rs[0].Scorer.Score(reward.Sample{Prompt: s.Prompt, Completion: s.Completion})
	if want := g.Families["qwen3"].Samples[0].Score; math.Abs(got-want) > 1e-4 {
		t.Errorf("score %v, golden %v", got, want)
	}
	for _, c := range []struct {
		spec rewardSpec
		want string
	}{
		{rewardSpec{Type: "reward_model"}, "path is empty"},
		{rewardSpec{Type: "reward_model", Path: filepath.Join(dir, "nope")}, "nope"},
		{rewardSpec{Type: "reward_model", Path: dir, Storage: "fp4"}, `weight storage "fp4"`},
		{rewardSpec{Type: "reward_model", Path: dir, DType: "fp16"}, `"fp16"`},
		{rewardSpec{Type: "reward_model", Path: dir, Tag: "answer"}, "tag does not apply"},
	} {
		if _, err := buildRewards([]rewardSpec{c.spec}); err == nil || !strings.Contains(err.Error(), c.want) ||
			!strings.Contains(err.Error(), "rewards[0]") {
			t.Errorf("%+v: error %v, want one mentioning %q", c.spec, err, c.want)
		}
	}
}
