package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// heldOutRun writes a 6-row "say <w>" dataset and a config with eval.n 2
// and no eval_path, plus extra, and returns the config's and the data's
// paths.
func heldOutRun(t *testing.T, dir, extra string) (cfg, data string) {
	t.Helper()
	var rows strings.Builder
	for _, w := range []string{"cat", "dog", "fish", "bird", "cow", "owl"} {
		fmt.Fprintf(&rows, `{"prompt": "say %s", "answer": "%s"}`+"\n", w, w)
	}
	data = filepath.Join(dir, "six.jsonl")
	if err := os.WriteFile(data, []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`
output_dir: %s
max_steps: 1
num_generations: 2
per_device_train_batch_size: 2
max_completion_length: 2
seed: 3
model:
  tiny: {hidden_size: 16, num_hidden_layers: 1, num_attention_heads: 2, words: [say, cat, dog, fish, bird, cow, owl]}
dataset:
  path: %s
rewards:
  - type: exact
eval: {n: 2}
%s`, filepath.Join(dir, "run"), data, extra)
	cfg = filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, data
}

// TestEvalHeldOut: with dataset.path and eval.n but no eval_path, eval.n
// rows picked with the seed are held out: training never sees them, the
// run says so at its start, and grpokit eval scores the same rows. Before,
// eval scored the first eval.n training rows.
func TestEvalHeldOut(t *testing.T) {
	dir := t.TempDir()
	cfg, data := heldOutRun(t, dir, "")
	c, err := loadRunConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	train, eval, note, err := loadData(&c)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, ex := range train {
		seen[ex.Prompt]++
	}
	for _, ex := range eval {
		seen[ex.Prompt] += 10
	}
	if len(train) != 4 || len(eval) != 2 || len(seen) != 6 {
		t.Fatalf("train %d rows, eval %d, %d distinct prompts; want 4, 2 and 6 (no row in both)", len(train), len(eval), len(seen))
	}
	want := "grpokit: eval: 2 of the 6 rows of " + data + " are held out (picked with seed 3): training uses the other 4 " +
		"(dataset.eval_path gives a separate eval file instead)"
	if note != want {
		t.Errorf("note %q, want %q", note, want)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"train", "-quiet", "-config", cfg}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, w := range []string{want, "4 training / 2 eval examples", "before (greedy, 2 examples)"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("train output lacks %q:\n%s", w, out.String())
		}
	}
	// grpokit eval takes its rows from the same held-out two, whatever -n.
	out.Reset()
	if err := run(context.Background(), []string{"eval", "-config", cfg, "-model", filepath.Join(dir, "run", "final"), "-n", "5", "-show", "5"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "eval (greedy, 2 examples)") {
		t.Errorf("eval output:\n%s", out.String())
	}
	for _, ex := range eval {
		if !strings.Contains(out.String(), fmt.Sprintf("--- %q", ex.Prompt)) {
			t.Errorf("eval did not score held-out row %q:\n%s", ex.Prompt, out.String())
		}
	}
}

// TestEvalHeldOutErrors: a config whose eval would take every row, or that
// evaluates during training with nothing held out, is refused.
func TestEvalHeldOutErrors(t *testing.T) {
	for _, c := range []struct{ name, extra, want string }{
		{"every row", "eval: {n: 6}\n", "grpokit: eval.n 6 would hold out all 6 rows of "},
		{"eval_strategy steps, nothing held out", "eval: {n: 0}\neval_strategy: steps\neval_steps: 1\n",
			"eval_strategy steps: no held-out rows to evaluate: set eval.n (that many rows of dataset.path are held out from training) or dataset.eval_path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, _ := heldOutRun(t, dir, "")
			rewriteConfig(t, cfg, func(body string) string { return strings.Replace(body, "eval: {n: 2}\n", c.extra, 1) })
			var out bytes.Buffer
			err := run(context.Background(), []string{"train", "-quiet", "-config", cfg}, &out)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one with %q\n%s", err, c.want, out.String())
			}
		})
	}
}
