package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/tokenizer"
)

// TestRewardModelReward builds a "reward_model" reward from a tiny
// reward model (reward/rewardmodel's golden qwen3 checkpoint with its
// tokenizer) and checks its score of a plain sample against the golden
// float64 reference, and the errors of bad specs.
func TestRewardModelReward(t *testing.T) {
	src := filepath.Join("..", "..", "reward", "rewardmodel", "testdata")
	dir := rewardModelDir(t)
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
	rs, err := buildRewards(withChatVars([]rewardSpec{{Type: "reward_model", Path: dir}, {Type: "reward_model", Name: "rm", Path: dir}},
		map[string]any{"enable_thinking": false}))
	if err != nil {
		t.Fatal(err)
	}
	// Named after its folder unless named, as TRL names a model reward.
	if _, ok := rs[0].Scorer.(reward.BatchScorer); !ok || rs[0].Name != filepath.Base(dir) || rs[1].Name != "rm" {
		t.Fatalf("rewards %q (%T), %q: want BatchScorers named after the folder and rm", rs[0].Name, rs[0].Scorer, rs[1].Name)
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

// rewardModelDir writes reward/rewardmodel's tiny golden Qwen3 reward
// model with a byte-level tokenizer to a temporary folder.
func rewardModelDir(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "reward", "rewardmodel", "testdata", "qwen3-seqcls")
	dir := filepath.Join(t.TempDir(), "tiny-rm")
	if err := tokenizer.WriteTinyDir(dir, nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A run whose rewards include a reward model trains, and logs the model's
// reward under the folder's name with no failures.
func TestTrainWithRewardModel(t *testing.T) {
	dir := t.TempDir()
	cfg := toyRun(t, dir, true, 2)
	rm := rewardModelDir(t)
	rewriteConfig(t, cfg, func(s string) string {
		return strings.Replace(s, "rewards:\n", "rewards:\n  - {type: reward_model, path: "+rm+", weight: 0.1}\n", 1)
	})
	var out bytes.Buffer
	if err := run(context.Background(), []string{"train", "-config", cfg}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	ms, err := grpo.ReadMetrics(filepath.Join(dir, "run", checkpoint.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, m := range ms {
		mean, ok := m["rewards/tiny-rm/mean"]
		if !ok {
			continue
		}
		steps++
		if f := m["rewards/tiny-rm/failures"]; f != 0 || mean == 0 || math.IsNaN(mean) {
			t.Errorf("step %v: reward model mean %v, %v failures", m["step"], mean, f)
		}
	}
	if steps != 2 {
		t.Errorf("%d steps logged the reward model, want 2:\n%s", steps, out.String())
	}
}

// grpokit plan counts a reward model's weights and forward pass without
// loading it, as the trainer's plan does once it is loaded.
func TestPlanWithRewardModel(t *testing.T) {
	dir := qwen3Folder(t)
	rm := rewardModelDir(t)
	data := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(data, []byte(`{"prompt": [{"role": "user", "content": "What is 2 + 2?"}], "answer": "4"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "run.yaml")
	body := fmt.Sprintf(`output_dir: %s
max_steps: 1
num_generations: 2
per_device_train_batch_size: 2
max_completion_length: 4
model: {model_name_or_path: %s, use_peft: true, lora_r: 4}
dataset: {path: %s}
rewards: [{type: numeric}, {type: reward_model, path: %s, storage: bf16}]
`, filepath.Join(t.TempDir(), "run"), dir, data, rm)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	rmLines := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "  reward tiny-rm: ") {
				out = append(out, l)
			}
		}
		return out
	}
	var plan, train bytes.Buffer
	if err := run(context.Background(), []string{"plan", "-config", cfg}, &plan); err != nil {
		t.Fatalf("%v\n%s", err, plan.String())
	}
	if err := run(context.Background(), []string{"train", "-config", cfg}, &train); err != nil {
		t.Fatalf("%v\n%s", err, train.String())
	}
	p, tr := rmLines(plan.String()), rmLines(train.String())
	if len(p) != 2 || !slices.Equal(p, tr) {
		t.Errorf("plan's reward model lines:\n%s\ntrain's:\n%s", strings.Join(p, "\n"), strings.Join(tr, "\n"))
	}
}
