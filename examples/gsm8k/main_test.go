package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/envs/gsm8k"
)

const row = `{"question": "Tom has 2 apples and buys 3 more. How many apples does he have?", "answer": "2 + 3 = <<2+3=5>>5\n#### 5"}`

// writeData writes train.jsonl and test.jsonl into a new folder.
func writeData(t *testing.T, train, test string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"train.jsonl": train, "test.jsonl": test} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRunSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for 2 steps")
	}
	var out bytes.Buffer
	cfg := defaults()
	cfg.Data = writeData(t, strings.Repeat(row+"\n", 4), row+"\n")
	cfg.Steps, cfg.SFTSteps, cfg.Prompts, cfg.Generations, cfg.Eval, cfg.MaxCompletion = 2, 2, 1, 2, 1, 12
	cfg.Out, cfg.Quiet, cfg.Stdout = t.TempDir(), true, &out
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"before GRPO", "after 2 GRPO steps", "reward strict_format"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, f := range []string{"metrics.jsonl", "reward.png", "eval.jsonl"} {
		if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
			t.Error(err)
		}
	}
	// One answer to the one held-out problem, before and after.
	answers, err := os.ReadFile(filepath.Join(cfg.Out, "eval-completions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(answers)), "\n"); len(lines) != 2 ||
		!strings.HasPrefix(lines[0], `{"step":0,"index":0,"completion":`) || !strings.HasPrefix(lines[1], `{"step":2,"index":0,"completion":`) {
		t.Errorf("eval-completions.jsonl:\n%s", answers)
	}

	// -resume restores checkpoint-2 (the warm start is not repeated) and
	// trains one more step.
	out.Reset()
	cfg.Resume, cfg.Steps = true, 3
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "resumed from "+filepath.Join(cfg.Out, "checkpoint-2")) || !strings.Contains(got, "after 3 GRPO steps") {
		t.Errorf("resumed run output:\n%s", got)
	}
	if strings.Contains(got, "warm start") {
		t.Errorf("resumed run repeated the warm start:\n%s", got)
	}
	// The resumed run reuses the evaluation logged at step 2.
	evals, err := os.ReadFile(filepath.Join(cfg.Out, "eval.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for line := range strings.Lines(string(evals)) {
		steps = append(steps, strings.SplitN(line, ",", 2)[0])
	}
	if want := []string{`{"step":0`, `{"step":2`, `{"step":3`}; !slices.Equal(steps, want) {
		t.Errorf("eval.jsonl steps %q, want %q", steps, want)
	}
}

func TestBadData(t *testing.T) {
	tests := []struct {
		name        string
		train, test string
		want        string
	}{
		{"malformed line", row + "\n{not json\n", row, "train.jsonl:2: invalid JSON"},
		{"answer with no number", row + "\n" + `{"question": "q?", "answer": "so #### lots"}`, row, `train.jsonl:2: gold answer "lots" after "####" is not a number`},
		{"no marker", `{"question": "q?", "answer": "5"}`, row, `train.jsonl:1: answer has no "#### " marker`},
		{"missing question", row, `{"answer": "#### 5"}`, `test.jsonl:1: missing "question"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaults()
			cfg.Data, cfg.Out = writeData(t, tc.train, tc.test), t.TempDir()
			err := run(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	cfg := defaults()
	cfg.Data, cfg.Out = filepath.Join(t.TempDir(), "nowhere"), t.TempDir()
	err := run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "nowhere/train.jsonl not found: give -data a folder") {
		t.Fatalf("missing data: error %v", err)
	}
}

func TestTarget(t *testing.T) {
	exs, err := gsm8k.Read(strings.NewReader(row), "row")
	if err != nil {
		t.Fatal(err)
	}
	two := "Tom has 2 apples.\nHe buys 3 more, so he has 2 + 3 = <<2+3=5>>5 apples in all now, which is the number of apples Tom has after buying.\n#### 5"
	for _, tc := range []struct {
		solution string
		whole    bool
		want     string
	}{
		{exs[0].Solution, false, "<reasoning>\n2 + 3 = 5\n</reasoning>\n<answer>\n5\n</answer>\n"},
		{exs[0].Solution, true, "<reasoning>\n2 + 3 = 5\n</reasoning>\n<answer>\n5\n</answer>\n"},
		// The tiny model's target keeps the last step, at most 24 words.
		{two, false, "<reasoning>\nHe buys 3 more, so he has 2 + 3 = 5 apples in all now, which is the number of apples Tom has\n</reasoning>\n<answer>\n5\n</answer>\n"},
		{two, true, "<reasoning>\nTom has 2 apples.\nHe buys 3 more, so he has 2 + 3 = 5 apples in all now, which is the number of apples Tom has after buying.\n</reasoning>\n<answer>\n5\n</answer>\n"},
	} {
		ex := exs[0]
		ex.Solution = tc.solution
		got := target(ex, tc.whole)
		if got != tc.want {
			t.Errorf("target(whole %v) = %q, want %q", tc.whole, got, tc.want)
		}
		// The warm-start target earns the seed's format and correctness rewards.
		if gsm8k.StrictFormatReward("", got, "") != 0.5 || gsm8k.CorrectnessReward("", got, "5") != 2 {
			t.Errorf("target(whole %v) does not score full format and correctness", tc.whole)
		}
	}
}

// TestShippedData checks that with no -data the example reads the copy of
// GSM8K shipped in envs/gsm8k, so that it runs from a fresh clone.
func TestShippedData(t *testing.T) {
	train, test, err := loadData("")
	if err != nil {
		t.Fatal(err)
	}
	if len(train) != 7473 || len(test) != 1319 {
		t.Errorf("shipped data: %d train / %d test problems, want 7473 / 1319", len(train), len(test))
	}
}

// TestBenchConfig checks that the GRPOConfig values bench/trl/gsm8k.py
// gives TRL reach examples/gsm8k too.
func TestBenchConfig(t *testing.T) {
	cfg := defaults()
	if err := parse(&cfg, []string{"-config", filepath.Join("..", "..", "bench", "trl", "gsm8k.yaml")}); err != nil {
		t.Fatal(err)
	}
	if cfg.Steps != 100 || cfg.Prompts != 2 || cfg.Generations != 8 || cfg.LR != 2e-5 || cfg.MaxCompletion != 200 ||
		cfg.Eval != 500 || cfg.Train != "lora" || cfg.LoRARank != 16 || cfg.TimeLimit.String() != "35m0s" {
		t.Errorf("example settings %+v", cfg)
	}
	gc := cfg.GRPO(5)
	if gc.ShuffleDataset || gc.TopP != 1 || gc.TopK != 0 || gc.LossType != "dapo" || gc.Beta != 0 || !gc.GradientCheckpointing ||
		gc.MaxGradNorm != 1 || gc.Seed != 1 || gc.BatchSize != 16 || gc.ScaleRewards != "group" {
		t.Errorf("trainer settings %+v", gc)
	}
}

// TestRowsAndWarmOut checks -rows (the training rows in visiting order,
// then the held-out problems, and no training) and -warm-out (the warm
// start written as a model folder that loads again, and no GRPO).
func TestRowsAndWarmOut(t *testing.T) {
	if testing.Short() {
		t.Skip("warm-starts a tiny model")
	}
	rows := []string{row, strings.Replace(row, "2 apples", "4 apples", 1), strings.Replace(row, "2 apples", "6 apples", 1)}
	cfg := defaults()
	cfg.Data = writeData(t, strings.Join(rows, "\n")+"\n", row+"\n")
	cfg.Steps, cfg.Prompts, cfg.Eval, cfg.MaxCompletion, cfg.SFTSteps = 1, 2, 1, 12, 2
	cfg.Out, cfg.Quiet, cfg.Stdout = t.TempDir(), true, io.Discard
	cfg.Rows = filepath.Join(cfg.Out, "rows.jsonl")
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(cfg.Rows)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	want := []string{`"split":"train","index":0,`, `"split":"train","index":1,`, `"split":"eval","index":0,`}
	if len(lines) != len(want) {
		t.Fatalf("%d rows, want 2 training + 1 held-out:\n%s", len(lines), data)
	}
	for i, l := range lines {
		if !strings.Contains(l, want[i]) {
			t.Errorf("row %d = %s, want %s", i, l, want[i])
		}
	}
	if !strings.Contains(lines[1], "4 apples") {
		t.Errorf("row 1 is not the second training problem: %s", lines[1])
	}

	cfg.Rows, cfg.WarmOut = "", filepath.Join(t.TempDir(), "warm")
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, "metrics.jsonl")); err == nil {
		t.Error("-warm-out ran GRPO: metrics.jsonl written")
	}
	cfg.Model, cfg.WarmOut, cfg.SFTSteps, cfg.Out = cfg.WarmOut, "", 0, t.TempDir()
	if err := run(context.Background(), cfg); err != nil {
		t.Fatalf("GRPO from the -warm-out folder: %v", err)
	}
}
