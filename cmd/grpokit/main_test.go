package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/sharedtest"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/tokenizer"
)

var toyWords = []string{"cat", "dog", "fish", "bird"}

// toyRun writes a "say <w>" → "<w>" JSONL dataset and a config training a
// tiny model on it (LoRA when peft), and returns the config's path.
func toyRun(t *testing.T, dir string, peft bool, steps int) string {
	t.Helper()
	var data strings.Builder
	for _, w := range toyWords {
		fmt.Fprintf(&data, `{"question": "say %s", "solution": "%s"}`+"\n", w, w)
	}
	if err := os.WriteFile(filepath.Join(dir, "toy.jsonl"), []byte(data.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`
output_dir: %s
max_steps: %d
num_generations: 4
per_device_train_batch_size: 8
learning_rate: 0.01
lr_scheduler_type: constant
max_completion_length: 3
logging_steps: 1
seed: 1
model:
  tiny: {hidden_size: 32, num_hidden_layers: 1, num_attention_heads: 2, words: [say]}
  use_peft: %t
  lora_r: 4
dataset:
  path: %[4]s
  eval_path: %[4]s
  prompt: question
  answer: solution
constraint:
  choices: [cat, dog, fish, bird]
rewards:
  - type: exact
    name: correct
  - type: max_length
    limit: 10
    weight: 0.1
eval:
  n: 4
`, filepath.Join(dir, "run"), steps, peft, filepath.Join(dir, "toy.jsonl"))
	path := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestTrainGenerateEval trains the toy config for 3 steps and checks the
// outputs, then runs generate, eval and plot on them.
func TestTrainGenerateEval(t *testing.T) {
	dir := t.TempDir()
	cfg := toyRun(t, dir, false, 3)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"train", "-config", cfg}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"before (greedy, 4 examples)", "step 3/3", "after (greedy, 4 examples)", "trained 3 steps"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("train output lacks %q:\n%s", want, out.String())
		}
	}
	runDir := filepath.Join(dir, "run")
	for _, f := range []string{"final/config.json", "final/model.safetensors", "final/tokenizer.json", "final/tokenizer_config.json",
		"final/generation_config.json", "final/constraint.json", "initial-model/config.json", "checkpoint-3/policy/tokenizer.json",
		"metrics.jsonl", "reward.png"} {
		if _, err := os.Stat(filepath.Join(runDir, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	// generate applies the saved constraint: every sample is a choice
	// (also with the weights quantized).
	for _, q := range []string{"", "nf4", "int8"} {
		out.Reset()
		err := run(context.Background(), []string{"generate", "-model", filepath.Join(runDir, "final"), "-raw", "-prompt", "say dog",
			"-n", "4", "-temperature", "1", "-max-new-tokens", "3", "-quantize", q}, &out)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if !strings.HasPrefix(line, "---") && !strings.Contains(" cat dog fish bird ", " "+line+" ") {
				t.Errorf("generate -quantize %q gave %q, outside the saved constraint", q, line)
			}
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"eval", "-config", cfg, "-model", filepath.Join(runDir, "checkpoint-3")}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "eval (greedy, 4 examples)") || !strings.Contains(out.String(), "correct") {
		t.Errorf("eval output:\n%s", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"plot", "-out", dir, filepath.Join(runDir, "metrics.jsonl")}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), filepath.Join(dir, "reward.png")) {
		t.Errorf("plot output:\n%s", out.String())
	}
	// A second run into the same folder without -resume is refused before it
	// writes or evaluates anything.
	initial := filepath.Join(runDir, "initial-model", "model.safetensors")
	saved, err := os.ReadFile(initial)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.yaml")
	if err := os.WriteFile(other, []byte(strings.Replace(readFile(t, cfg), "hidden_size: 32", "hidden_size: 16", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = run(context.Background(), []string{"train", "-config", other}, &out)
	if !errors.Is(err, checkpoint.ErrOutputDirInUse) || !strings.Contains(err.Error(), "-resume") || !strings.Contains(err.Error(), "checkpoint-3") ||
		strings.Contains(err.Error(), "Trainer.Resume") {
		t.Errorf("second run into %s: err = %v, want ErrOutputDirInUse naming checkpoint-3 and -resume (the command's words, not the library's)", runDir, err)
	}
	if strings.Contains(out.String(), "before (greedy") {
		t.Errorf("the refused run evaluated first:\n%s", out.String())
	}
	if now, err := os.ReadFile(initial); err != nil || !bytes.Equal(now, saved) {
		t.Errorf("the refused run rewrote initial-model (err %v)", err)
	}
	// -resume with settings that build another tiny model is refused too,
	// before the run's initial-model is touched.
	err = run(context.Background(), []string{"train", "-config", other, "-resume", "-max-steps", "4"}, &out)
	if err == nil || !strings.Contains(err.Error(), "config.json differs") {
		t.Errorf("resume with another width: err = %v, want one naming config.json", err)
	}
	if now, err := os.ReadFile(initial); err != nil || !bytes.Equal(now, saved) {
		t.Errorf("the refused resume rewrote initial-model (err %v)", err)
	}
	// -resume continues from checkpoint-3.
	out.Reset()
	if err := run(context.Background(), []string{"train", "-config", cfg, "-resume", "-max-steps", "4"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "resumed from "+filepath.Join(runDir, "checkpoint-3")) || !strings.Contains(out.String(), "trained 4 steps") {
		t.Errorf("resumed run:\n%s", out.String())
	}
}

// TestEvalUntrained: eval without -model builds the config's untrained
// tiny model in a folder of its own, removed afterwards (it used the
// system's temporary folder itself: TMPDIR/initial-model, shared by every
// such eval and left behind).
func TestEvalUntrained(t *testing.T) {
	dir, tmp := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	cfg := toyRun(t, dir, false, 1)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"eval", "-config", cfg}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "eval (greedy, 4 examples)") {
		t.Errorf("eval output:\n%s", out.String())
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("eval left %v in TMPDIR", entries)
	}
}

// TestMergeKeepsFiles: merge never writes into the base's or the adapter's
// folder, refuses a folder holding files unless -overwrite, and leaves no
// temporary folder behind.
func TestMergeKeepsFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := toyRun(t, dir, true, 1)
	if err := run(context.Background(), []string{"train", "-quiet", "-config", cfg}, io.Discard); err != nil {
		t.Fatal(err)
	}
	base, adapter := filepath.Join(dir, "run", "initial-model"), filepath.Join(dir, "run", "final")
	baseWeights := readFile(t, filepath.Join(base, "model.safetensors"))
	used := filepath.Join(dir, "used")
	if err := os.MkdirAll(used, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(used, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		out     string
		extra   []string
		wantErr string
	}{
		{"into the base's folder", base, nil, "is or holds the folder of"},
		{"into the base's folder, -overwrite", base, []string{"-overwrite"}, "is or holds the folder of"},
		{"into the adapter's folder", adapter, []string{"-overwrite"}, "is or holds the folder of"},
		{"into a folder holding the base, -overwrite", filepath.Join(dir, "run"), []string{"-overwrite"}, "holds the folder of"},
		{"into a folder with files", used, nil, "-overwrite"},
		{"into a new folder", filepath.Join(dir, "new", "merged"), nil, ""},
		{"into a folder with files, -overwrite", used, []string{"-overwrite"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"merge", "-model", base, "-adapter", adapter, "-out", c.out}, c.extra...)
			err := run(context.Background(), args, io.Discard)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := model.Load(c.out, nil); err != nil {
				t.Errorf("merged folder does not load: %v", err)
			}
		})
	}
	if readFile(t, filepath.Join(base, "model.safetensors")) != baseWeights {
		t.Error("the base's weights changed")
	}
	if _, err := os.Stat(filepath.Join(used, "notes.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("-overwrite kept the old files (notes.txt: %v)", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary folder %s left behind", e.Name())
		}
	}
}

// TestMergeReloadsIdentically: a LoRA run's adapter merged into its base
// and written by merge reloads (model.Load) with exactly the logits of the
// merged model in memory, within 1e-4 of base + adapter, with the tokenizer
// files and the constraint beside it.
func TestMergeReloadsIdentically(t *testing.T) {
	dir := t.TempDir()
	cfg := toyRun(t, dir, true, 2)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"train", "-quiet", "-config", cfg}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	base, adapter, merged := filepath.Join(dir, "run", "initial-model"), filepath.Join(dir, "run", "final"), filepath.Join(dir, "merged")
	if err := run(context.Background(), []string{"merge", "-model", base, "-adapter", adapter, "-out", merged}, &out); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.LoadDir(merged)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := model.LoadConstraint(merged); err != nil || c == nil {
		t.Errorf("merged folder constraint: %v, %v", c, err)
	}
	ids := tok.Tokenizer.Encode("say fish cat", false)
	batch := model.Batch{IDs: [][]int{ids}, Mask: [][]int{ones(len(ids))}, Positions: [][]int{iota(len(ids))}}
	logits := func(l *loaded, merge bool) []float32 {
		if merge {
			if err := l.adapter.Merge(); err != nil {
				t.Fatal(err)
			}
		}
		out, err := l.model.Logits(batch)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	withAdapter, err := loadModel(base, adapter, nil, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	ref := logits(withAdapter, false)
	inMemory, err := loadModel(base, adapter, nil, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	want := logits(inMemory, true)
	back, err := loadModel(merged, "", nil, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	got := logits(back, false)
	maxDiff := 0.0
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("logit %d: reloaded %v, merged in memory %v", i, got[i], want[i])
		}
		maxDiff = max(maxDiff, math.Abs(float64(got[i]-ref[i])))
	}
	if maxDiff > 1e-4 {
		t.Errorf("merged vs base+adapter: max logit difference %g > 1e-4", maxDiff)
	}
	if d, err := model.WeightsDType(merged); err != nil || d != "F32" {
		t.Errorf("merged dtype %q, %v; want the base's F32", d, err)
	}
	// -dtype BF16 writes bfloat16 weights and says so in config.json.
	bf := filepath.Join(dir, "merged-bf16")
	if err := run(context.Background(), []string{"merge", "-model", base, "-adapter", adapter, "-out", bf, "-dtype", "bf16"}, &out); err != nil {
		t.Fatal(err)
	}
	cfgJSON, _ := os.ReadFile(filepath.Join(bf, "config.json"))
	if d, err := model.WeightsDType(bf); err != nil || d != "BF16" || !strings.Contains(string(cfgJSON), `"torch_dtype": "bfloat16"`) {
		t.Errorf("bf16 merge: dtype %q, %v; config.json %s", d, err, cfgJSON)
	}
	if _, err := loadModel(bf, "", nil, os.Stderr); err != nil {
		t.Errorf("bf16 merge does not load: %v", err)
	}
}

func ones(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

func iota(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestConfigs checks that the task configs shipped in examples/configs
// parse and validate, and that bad configs fail with a useful message.
func TestConfigs(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "examples", "configs", "*.yaml"))
	if err != nil || len(paths) < 3 {
		t.Fatalf("configs %v, %v", paths, err)
	}
	for _, p := range paths {
		c, err := loadRunConfig(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if err := c.validate(); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		if err := c.Config.Validate(); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		if _, err := buildRewards(c.Rewards); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	dir := t.TempDir()
	for body, want := range map[string]string{
		"max_step: 3\n":                         `unknown key "max_step" (did you mean "max_steps"?)`,
		"model: {tiny: {hiden_size: 8}}\n":      `unknown key "model.tiny.hiden_size" (did you mean "model.tiny.hidden_size"?)`,
		"rewards: [{type: exact, wieght: 2}]\n": `unknown key "rewards.0.wieght" (did you mean "rewards.0.weight"?)`,
	} {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadRunConfig(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", body, err, want)
		}
	}
	c := defaultRunConfig()
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "model: give exactly one of") || !strings.Contains(err.Error(), "rewards: none given") {
		t.Errorf("empty config: %v", err)
	}
	if _, err := buildRewards([]rewardSpec{{Type: "exactly"}}); err == nil || !strings.Contains(err.Error(), `unknown type "exactly"`) {
		t.Errorf("bad reward type: %v", err)
	}
	if err := run(context.Background(), []string{"fly"}, &bytes.Buffer{}); exitCode(err) != 2 {
		t.Errorf("unknown command: %v (exit %d)", err, exitCode(err))
	}
}

// TestConfigSavesPeriodically checks that a run of the command checkpoints
// every grpo.DefaultSaveMinutes unless its file says otherwise, so a killed
// run loses minutes, not the run.
// TestPromptTooLong: prompts that do not fit the model's context with
// max_completion_length are an error before training, naming the setting
// that fixes it, and leave no checkpoint; with max_prompt_length the run
// trains (prompts cut from the left).
func TestPromptTooLong(t *testing.T) {
	dir := t.TempDir()
	cfg := toyRun(t, dir, false, 1)
	body := strings.Replace(readFile(t, cfg), "words: [say]}", "words: [say], max_position_embeddings: 4}", 1)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"train", "-quiet", "-config", cfg}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "4 training prompts do not fit") || !strings.Contains(err.Error(), "max_prompt_length") ||
		!strings.Contains(err.Error(), "at most 1") {
		t.Fatalf("err = %v, want the training prompts named, with max_prompt_length at most 1", err)
	}
	if ckpt, err := grpo.LatestCheckpoint(filepath.Join(dir, "run")); err == nil {
		t.Errorf("the refused run left %s", ckpt)
	}
	if err := os.WriteFile(cfg, []byte(body+"max_prompt_length: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"train", "-quiet", "-config", cfg}, io.Discard); err != nil {
		t.Errorf("with max_prompt_length 1: %v", err)
	}
}

// TestBadFlags: flags a command cannot honour are errors that name them,
// before any model is loaded.
func TestBadFlags(t *testing.T) {
	cfg := toyRun(t, t.TempDir(), false, 1)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"generate", "-model", "nowhere"}, "-prompt is required"},
		{[]string{"generate", "-model", "nowhere", "-prompt", "hi", "-n", "0"}, "-n 0: want ≥ 1"},
		{[]string{"merge", "-model", "a", "-adapter", "b"}, "-model, -adapter and -out are required"},
		{[]string{"train"}, "-config is required"},
		{[]string{"eval", "-config", cfg, "-n", "-1"}, "-n -1 -show 3: want ≥ 0"},
		{[]string{"generate", "-model", "m", "-prompt", "hi", "-chat-template-kwargs", "enable_thinking=false"}, "-chat-template-kwargs: want a JSON object"},
		{[]string{"chat", "-model", "m", "-chat-template-kwargs", "[1]"}, "-chat-template-kwargs: want a JSON object"},
		{[]string{"generate", "-model", "m", "-prompt", "hi", "-quantize", "fp4"}, `-quantize "fp4": want nf4, int8 or gguf`},
		{[]string{"eval", "-config", cfg, "-quantize", "nf4"}, "-quantize applies to -model"},
	} {
		err := run(context.Background(), c.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want one containing %q", c.args, err, c.want)
		}
	}
}

// TestConfigHomePaths: a config's paths may start with ~ (the README's
// example config does), as in a shell; other paths stay as written.
func TestConfigHomePaths(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	body := "output_dir: ~/runs/x\nmodel: {model_name_or_path: ~/models/qwen}\ndataset: {path: \"~\", eval_path: data/~eval.jsonl}\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := loadRunConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ got, want string }{
		{c.OutputDir, filepath.Join(home, "runs", "x")},
		{c.Model.Path, filepath.Join(home, "models", "qwen")},
		{c.Dataset.Path, home},
		{c.Dataset.EvalPath, "data/~eval.jsonl"},
	} {
		if tc.got != tc.want {
			t.Errorf("path %q, want %q", tc.got, tc.want)
		}
	}
}

func TestConfigSavesPeriodically(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]float64{
		"max_steps: 3\n":                   grpo.DefaultSaveMinutes,
		"save_minutes: 0\nsave_steps: 5\n": 0,
		"save_minutes: 1.5\n":              1.5,
	} {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := loadRunConfig(p)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if c.SaveMinutes != want || c.SaveTotalLimit != 2 {
			t.Errorf("%q: save_minutes %v, save_total_limit %d; want %v, 2", body, c.SaveMinutes, c.SaveTotalLimit, want)
		}
	}
}

// TestConfigGenerationBatch gives TRL 1.10's steps_per_generation and
// generation_batch_size in a config file: they reach grpo.Config, and
// setting both is TRL's error.
func TestConfigGenerationBatch(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]string{
		"per_device_train_batch_size: 8\nnum_generations: 4\nsteps_per_generation: 3\n":                            "24",
		"per_device_train_batch_size: 8\nnum_generations: 4\ngeneration_batch_size: 32\n":                          "32",
		"per_device_train_batch_size: 8\nnum_generations: 4\ngeneration_batch_size: 32\nsteps_per_generation: 4\n": "'generation_batch_size' and 'steps_per_generation' can not be both configured at the same time",
	} {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := loadRunConfig(p)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		got := fmt.Sprint(c.EffectiveGenerationBatchSize())
		if err := c.Config.Validate(); err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, want) {
			t.Errorf("%q: %s, want %q", body, got, want)
		}
	}
}

// A dataset as the Hub serves it: a split's Parquet shards (DuckDB-written,
// TRL's conversational prompt column, integer answers), read through a
// pattern, trained on and evaluated from a separate shard.
func TestTrainParquetShards(t *testing.T) {
	dir := t.TempDir()
	shards, err := filepath.Abs("../../dataset/testdata/datasets")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "run.yaml")
	body := fmt.Sprintf(`
output_dir: %s
max_steps: 1
num_generations: 2
per_device_train_batch_size: 2
max_completion_length: 4
model:
  tiny: {hidden_size: 16, num_hidden_layers: 1, num_attention_heads: 2, words_from_dataset: 50}
dataset:
  path: %s
  eval_path: %s
rewards:
  - {type: numeric}
eval: {n: 3}
`, filepath.Join(dir, "run"), filepath.Join(shards, "train-*-of-00002.parquet"), filepath.Join(shards, "train-00001-of-00002.parquet"))
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"train", "-config", cfg}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"300 training / 3 eval examples", "trained 1 steps"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("train output lacks %q:\n%s", want, out.String())
		}
	}
}

// TRL's model options: QLoRA's quantized base (load_in_4bit with nested
// quantization, load_in_8bit) and the compute dtype reach the model, as the
// memory plan shows; combinations PEFT refuses are errors.
func TestModelOptions(t *testing.T) {
	for _, tc := range []struct {
		name, keys, want string
	}{
		{"nf4", "  load_in_4bit: true\n  bnb_4bit_quant_type: nf4\n  use_bnb_nested_quant: true\n", "LoRA r=4, base held as nf4 (double quant), compute float32"},
		{"int8", "  load_in_8bit: true\n", "LoRA r=4, base held as int8, compute float32"},
		{"bf16", "  dtype: bfloat16\n", "LoRA r=4, base held as stored, compute bfloat16"},
		{"bf16 warning", "  dtype: bfloat16\n", "grpokit: warning: compute bfloat16 on the pure-Go backend is 2–3× slower than float32"},
		{"auto", "  torch_dtype: auto\n", "LoRA r=4, base held as stored, compute float32"},
		{"rslora", "  use_rslora: true\n", "trained 1 steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := toyRun(t, dir, true, 1)
			rewriteConfig(t, cfg, func(body string) string {
				return strings.Replace(body, "  use_peft: true\n", "  use_peft: true\n"+tc.keys, 1)
			})
			var out bytes.Buffer
			if err := run(context.Background(), []string{"train", "-config", cfg}, &out); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("train output lacks %q:\n%s", tc.want, out.String())
			}
			peft, err := os.ReadFile(filepath.Join(dir, "run", "final", "adapter_config.json"))
			if err != nil {
				t.Fatal(err)
			}
			if rs := strings.Contains(string(peft), `"use_rslora": true`); rs != (tc.name == "rslora") {
				t.Errorf("adapter_config.json says use_rslora %t:\n%s", rs, peft)
			}
		})
	}
	for _, tc := range []struct{ keys, want string }{
		{"  use_peft: false\n  load_in_4bit: true\n", "trains only as a LoRA adapter: set use_peft: true"},
		{"  load_in_4bit: true\n  load_in_8bit: true\n", "load_in_4bit and load_in_8bit: give one"},
		{"  load_in_4bit: true\n  bnb_4bit_quant_type: fp4\n", `bnb_4bit_quant_type "fp4": want nf4, or gguf`},
		{"  load_in_4bit: true\n  bnb_4bit_quant_type: gguf\n", "is not a GGUF file"},
		{"  use_bnb_nested_quant: true\n", "needs load_in_4bit: true"},
		{"  dtype: float16\n", `compute dtype "float16" is not supported`},
		{"  dtype: bfloat16\n  torch_dtype: float32\n", `dtype "bfloat16" and torch_dtype "float32" differ`},
	} {
		dir := t.TempDir()
		cfg := toyRun(t, dir, true, 1)
		rewriteConfig(t, cfg, func(body string) string {
			body = strings.Replace(strings.Replace(body, "  use_peft: true\n", "", 1), "  lora_r: 4\n", "  lora_r: 4\n"+tc.keys, 1)
			if !strings.Contains(tc.keys, "use_peft") {
				body = strings.Replace(body, "  lora_r: 4\n", "  lora_r: 4\n  use_peft: true\n", 1)
			}
			return body
		})
		err := run(context.Background(), []string{"train", "-config", cfg}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.keys, err, tc.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "run")); err == nil {
			t.Errorf("%q: the refused config wrote %s", tc.keys, filepath.Join(dir, "run"))
		}
	}
}

// "auto" is the checkpoint's own dtype, as in transformers.
func TestModelOptionsAuto(t *testing.T) {
	for _, tc := range []struct {
		m          modelSection
		checkpoint string
		want       dtypes.DType
	}{
		{modelSection{DType: "auto"}, "bfloat16", dtypes.BFloat16},
		{modelSection{TorchDType: "AUTO"}, "float32", dtypes.Float32},
		{modelSection{DType: "torch.bfloat16"}, "float32", dtypes.BFloat16},
		{modelSection{}, "bfloat16", dtypes.Float32},
	} {
		opts, err := tc.m.options(tc.checkpoint)
		if err != nil || opts.Compute != tc.want {
			t.Errorf("%+v over a %s checkpoint: %v, %v; want %s", tc.m, tc.checkpoint, opts, err, tc.want)
		}
	}
}

// qwen3Folder writes a Qwen3-architecture model folder with random weights
// (small shapes, the real vocabulary) and Qwen3's real tokenizer files.
func qwen3Folder(t *testing.T) string {
	t.Helper()
	sharedtest.Dir(t, "tokenizers") // skip before writing the weights
	dir := t.TempDir()
	cfg := model.Config{ModelType: "qwen3", VocabSize: 151936, HiddenSize: 16, IntermediateSize: 32, NumHiddenLayers: 1,
		NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 8, MaxPositionEmbeddings: 256, RMSNormEps: 1e-6,
		RopeTheta: 1e6, TieWordEmbeddings: true, HiddenAct: "silu", BOSTokenID: 151643, EOSTokenIDs: []int{151645}}
	if err := model.WriteRandomHF(dir, cfg, 1, "bf16"); err != nil {
		t.Fatal(err)
	}
	sharedtest.WriteTokenizer(t, dir, "qwen3")
	return dir
}

// chat_template_kwargs reaches Qwen3's real chat template: enable_thinking
// false renders the empty think block that turns thinking off, as
// transformers' apply_chat_template does.
func TestChatTemplateKwargs(t *testing.T) {
	dir := qwen3Folder(t)
	data := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(data, []byte(`{"prompt": [{"role": "user", "content": "hi"}], "answer": "1"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kwargs string
		think  bool
	}{
		{"", false},
		{"chat_template_kwargs: {enable_thinking: false}\n", true},
		{"chat_template_kwargs: {enable_thinking: true}\n", false},
	} {
		cfgPath := filepath.Join(t.TempDir(), "run.yaml")
		body := fmt.Sprintf("output_dir: %s\nmodel: {model_name_or_path: %s}\ndataset: {path: %s}\nrewards: [{type: exact}]\n%s",
			filepath.Join(t.TempDir(), "run"), dir, data, tc.kwargs)
		if err := os.WriteFile(cfgPath, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := loadRunConfig(cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		s, err := prepare(&c, false, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := s.policy.PromptIDs(s.train[0], 0)
		if err != nil {
			t.Fatal(err)
		}
		text := s.loaded.tok.Tokenizer.Decode(ids, false)
		want := "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
		if tc.think {
			want += "<think>\n\n</think>\n\n"
		}
		if text != want {
			t.Errorf("%q: prompt %q, want %q", tc.kwargs, text, want)
		}
	}
}

// The README's example config is one grpokit accepts: every key known,
// the sections valid, the rewards buildable.
func TestReadmeConfig(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README has no yaml block")
	}
	path := filepath.Join(t.TempDir(), "readme.yaml")
	if err := os.WriteFile(path, []byte(block), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := loadRunConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := buildRewards(c.Rewards); err != nil {
		t.Fatal(err)
	}
	if !c.Model.LoadIn4bit || c.ChatTemplateKwargs["enable_thinking"] != false || c.Dataset.Prompt != "question" {
		t.Errorf("README config read as %+v", c)
	}
}

// A config carrying TRL's own keys loads: those with no effect here are
// accepted with a note (printed before training), those grpokit cannot
// honour are errors that say so, and bf16 sets the compute dtype.
func TestTRLKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := toyRun(t, dir, true, 1)
	rewriteConfig(t, cfg, func(body string) string {
		return "report_to: wandb\nuse_vllm: false\nbf16: true\noptim: adamw_torch_fused\nlogging_strategy: steps\n" +
			strings.Replace(body, "  use_peft: true\n", "  use_peft: true\n  attn_implementation: sdpa\n  lora_task_type: CAUSAL_LM\n", 1)
	})
	var out bytes.Buffer
	if err := run(context.Background(), []string{"train", "-config", cfg}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// bf16 is grpokit train's own key: true computes in bfloat16.
	for _, want := range []string{"compute bfloat16)", `grpokit: config: model.attn_implementation: "sdpa" has no effect`,
		`grpokit: config: report_to: "wandb" has no effect`, "trained 1 steps"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("train output lacks %q:\n%s", want, out.String())
		}
	}
	rewriteConfig(t, cfg, func(body string) string { return strings.Replace(body, "use_vllm: false", "use_vllm: true", 1) })
	if err := run(context.Background(), []string{"train", "-config", cfg}, io.Discard); err == nil || !strings.Contains(err.Error(), "use_vllm: true is not supported") {
		t.Errorf("use_vllm: true: %v", err)
	}
}

// load_in_4bit on a GGUF file keeps the file's blocks (bnb_4bit_quant_type
// gguf, the default there): plan counts their bytes as train holds them,
// and one LoRA step trains on them; bnb_4bit_quant_type nf4 quantizes the
// file's weights to NF4 instead.
func TestPlanGGUFBlocks(t *testing.T) {
	golden := sharedtest.Dir(t, "golden", "llama-tiny")
	path := filepath.Join(t.TempDir(), "llama-q4_0.gguf")
	if err := run(context.Background(), []string{"export", "-model", golden, "-format", "gguf", "-out", path, "-dtype", "Q4_0"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(data, []byte(`{"prompt": "2 + 2 =", "answer": "4"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ keys, want string }{
		{"", "weights (gguf)"},
		{", bnb_4bit_quant_type: nf4", "weights (nf4)"},
	} {
		cfg := filepath.Join(t.TempDir(), "run.yaml")
		body := fmt.Sprintf(`output_dir: %s
max_steps: 1
num_generations: 2
per_device_train_batch_size: 2
max_completion_length: 4
model: {model_name_or_path: %s, use_peft: true, lora_r: 4, load_in_4bit: true%s}
dataset: {path: %s}
rewards: [{type: numeric}]
`, filepath.Join(t.TempDir(), "run"), path, tc.keys, data)
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		var plan, train bytes.Buffer
		if err := run(context.Background(), []string{"plan", "-config", cfg}, &plan); err != nil {
			t.Fatalf("%v\n%s", err, plan.String())
		}
		if err := run(context.Background(), []string{"train", "-config", cfg}, &train); err != nil {
			t.Fatalf("%v\n%s", err, train.String())
		}
		p, tr := memoryPlanLines(plan.String()), memoryPlanLines(train.String())
		if !strings.Contains(strings.Join(p, "\n"), tc.want) || !slices.Equal(p, tr) || !strings.Contains(train.String(), "trained 1 steps") {
			t.Errorf("%q: plan:\n%s\ntrain:\n%s", tc.keys, strings.Join(p, "\n"), train.String())
		}
	}
}

// memoryPlanLines returns the lines of the memory plan in a command's
// output, without the line of available memory.
func memoryPlanLines(s string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(l, "memory plan:"):
			in = true
		case !strings.HasPrefix(l, "  "):
			in = false
		}
		if in && !strings.Contains(l, "available (") {
			out = append(out, l)
		}
	}
	return out
}

// grpokit plan prints, without loading the weights, the memory plan that
// train prints before step 0, and fails as train would when it does not
// fit.
func TestPlan(t *testing.T) {
	dir := qwen3Folder(t)
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
model: {model_name_or_path: %s, use_peft: true, lora_r: 4, load_in_4bit: true}
dataset: {path: %s}
rewards: [{type: numeric}]
`, filepath.Join(t.TempDir(), "run"), dir, data)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	planLines := func(s string) []string {
		var out []string
		in := false
		for _, l := range strings.Split(s, "\n") {
			switch {
			case strings.HasPrefix(l, "memory plan:"):
				in = true
			case !strings.HasPrefix(l, "  "):
				in = false
			}
			if in && !strings.Contains(l, "available (") {
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
	p, tr := planLines(plan.String()), planLines(train.String())
	if len(p) < 10 || !strings.Contains(strings.Join(p, "\n"), "weights (nf4)") || !slices.Equal(p, tr) {
		t.Errorf("plan:\n%s\ntrain's plan:\n%s", strings.Join(p, "\n"), strings.Join(tr, "\n"))
	}
	t.Setenv(memplan.LimitEnv, "1MB")
	var oom *memplan.OutOfMemoryError
	if err := run(context.Background(), []string{"plan", "-config", cfg}, io.Discard); !errors.As(err, &oom) {
		t.Errorf("a 1 MB limit: %v, want an *OutOfMemoryError", err)
	}
}

// eval_strategy: steps evaluates the config's eval set during training
// (grpokit train left Trainer.EvalDataset unset: the run stopped at once).
func TestTrainEvalStrategy(t *testing.T) {
	dir := t.TempDir()
	cfg := toyRun(t, dir, false, 2)
	rewriteConfig(t, cfg, func(body string) string {
		return "eval_strategy: steps\neval_steps: 1\nnum_generations_eval: 2\n" + body
	})
	var out bytes.Buffer
	if err := run(context.Background(), []string{"train", "-config", cfg}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	ms, err := grpo.ReadMetrics(filepath.Join(dir, "run", checkpoint.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	evals := 0
	for _, m := range ms {
		if _, ok := m["eval_reward"]; ok {
			evals++
		}
	}
	if evals != 2 {
		t.Errorf("%d eval lines in metrics.jsonl, want 2:\n%s", evals, out.String())
	}
}

// rewriteConfig replaces the config file at path with edit of its text.
func rewriteConfig(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(edit(string(body))), 0o644); err != nil {
		t.Fatal(err)
	}
}

// generation_kwargs apply when the config is read, before the prompt
// check and the memory plan use the lengths.
func TestConfigGenerationKwargs(t *testing.T) {
	cfg := toyRun(t, t.TempDir(), false, 1)
	rewriteConfig(t, cfg, func(body string) string { return "generation_kwargs: {max_new_tokens: 2, top_k: 3}\n" + body })
	c, err := loadRunConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxCompletionLength != 2 || c.TopK != 3 {
		t.Errorf("max_completion_length %d, top_k %d; want 2, 3", c.MaxCompletionLength, c.TopK)
	}
	rewriteConfig(t, cfg, func(body string) string { return strings.Replace(body, "top_k: 3", "do_sample: false", 1) })
	if _, err := loadRunConfig(cfg); err == nil || !strings.Contains(err.Error(), `"do_sample" has no grpokit setting`) {
		t.Errorf("do_sample: %v", err)
	}
}

// bf16 and model.dtype choose the compute dtype; given neither, XLA
// computes in bfloat16 (TRL's bf16 default) and the pure-Go backend in
// float32, and the start-up note says why.
func TestResolveDType(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name    string
		c       runConfig
		want    string // model.DType after
		note    string // substring of dtypeNote; "" wants none
		wantErr string
	}{
		{"go default", runConfig{Backend: "go"}, "float32", "pure-Go backend computes bfloat16 2–3× slower", ""},
		{"xla default", runConfig{Backend: "xla:cpu"}, "bfloat16", "TRL's bf16 default", ""},
		{"bf16 true on go", runConfig{Backend: "go", BF16: &yes}, "bfloat16", "", ""},
		{"bf16 false on xla", runConfig{Backend: "xla:cpu", BF16: &no}, "float32", "", ""},
		{"dtype given", runConfig{Backend: "xla:cpu", Model: modelSection{DType: "float32"}}, "float32", "", ""},
		{"torch_dtype given", runConfig{Backend: "go", Model: modelSection{TorchDType: "bfloat16"}}, "", "", ""},
		{"agree", runConfig{BF16: &yes, Model: modelSection{DType: "bf16"}}, "bf16", "", ""},
		{"disagree", runConfig{BF16: &no, Model: modelSection{DType: "bfloat16"}}, "bfloat16", "", `bf16: false and model.dtype "bfloat16" disagree`},
	} {
		err := tc.c.resolveDType()
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
		}
		if tc.c.Model.DType != tc.want || (tc.note == "") != (tc.c.dtypeNote == "") || !strings.Contains(tc.c.dtypeNote, tc.note) {
			t.Errorf("%s: dtype %q, note %q; want %q, note %q", tc.name, tc.c.Model.DType, tc.c.dtypeNote, tc.want, tc.note)
		}
	}
}

// chat_template_kwargs with plain prompts gets one warning at start,
// unless template_plain_prompts renders them.
func TestPlainPromptsWarning(t *testing.T) {
	plain := dataset.SliceDataset{{Prompt: "a"}, {Prompt: "b"}}
	chat := dataset.SliceDataset{{Messages: []dataset.Message{{Role: "user", Content: "a"}}}}
	kw := map[string]any{"enable_thinking": false}
	for _, tc := range []struct {
		name string
		c    runConfig
		sets []dataset.SliceDataset
		want string // substring; "" wants none
	}{
		{"plain with kwargs", runConfig{ChatTemplateKwargs: kw}, []dataset.SliceDataset{plain, chat}, "chat_template_kwargs has no effect on the 2 plain-text prompts"},
		{"templated", runConfig{ChatTemplateKwargs: kw, TemplatePlainPrompts: true}, []dataset.SliceDataset{plain}, ""},
		{"no kwargs", runConfig{}, []dataset.SliceDataset{plain}, ""},
		{"chat only", runConfig{ChatTemplateKwargs: kw}, []dataset.SliceDataset{chat}, ""},
	} {
		got := plainPromptsWarning(&tc.c, tc.sets...)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestTrainTools trains the toy config with the built-in calculator: the
// constraint lets each turn be a call or a word, so trajectories call the
// tool, and the tool metrics reach metrics.jsonl. Bad tool settings are
// errors before anything runs.
func TestTrainTools(t *testing.T) {
	dir := t.TempDir()
	cfg := toyRun(t, dir, false, 2)
	rewriteConfig(t, cfg, func(body string) string {
		body = strings.Replace(body, "max_completion_length: 3", "max_completion_length: 40\nmax_tool_calling_iterations: 1", 1)
		body = strings.Replace(body, "choices: [cat, dog, fish, bird]", `choices: ["<call>calculator 2*3</call>", cat, dog, fish, bird]`, 1)
		return "tools: [calculator]\n" + body
	})
	var out, plan bytes.Buffer
	if err := run(context.Background(), []string{"plan", "-config", cfg}, &plan); err != nil {
		t.Fatalf("%v\n%s", err, plan.String())
	}
	if err := run(context.Background(), []string{"train", "-config", cfg}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// grpokit plan prints train's plan: the KV cache of a trajectory's
	// longest turn.
	if i := strings.Index(plan.String(), "KV cache"); i < 0 || !strings.Contains(plan.String(), "the longest turn's context") ||
		!strings.Contains(out.String(), plan.String()[i:i+strings.Index(plan.String()[i:], "\n")]) {
		t.Errorf("plan:\n%s\ntrain:\n%s", plan.String(), out.String())
	}
	if !strings.Contains(out.String(), "tools: calculator") {
		t.Errorf("output does not name the tools:\n%s", out.String())
	}
	ms, err := grpo.ReadMetrics(filepath.Join(dir, "run", checkpoint.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0.0
	for _, m := range ms {
		if _, ok := m["tools/failure_frequency"]; !ok {
			t.Errorf("step %v: no tools/failure_frequency", m["step"])
		}
		calls += m["tools/call_frequency"]
	}
	if !(calls > 0) {
		t.Errorf("no tool calls in %d steps:\n%s", len(ms), out.String())
	}
	for _, tc := range []struct{ edit, want string }{
		{"tools: [python]\n", `tools: agent: no built-in tool "python" (have: calculator, dates)`},
		{"tools: [calculator]\ntool_call_format: xml\n", `tool_call_format: "xml": want hermes, llama3, gemma or plain`},
		{"tools: [calculator]\nmax_tool_calling_iterations: -1\n", "max_tool_calling_iterations = -1: must be ≥ 0"},
	} {
		bad := toyRun(t, t.TempDir(), false, 1)
		rewriteConfig(t, bad, func(body string) string { return tc.edit + body })
		err := run(context.Background(), []string{"train", "-config", bad}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.edit, err, tc.want)
		}
	}
}
