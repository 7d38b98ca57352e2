package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
	got := target(exs[0])
	want := "<reasoning>\n2 + 3 = 5\n</reasoning>\n<answer>\n5\n</answer>\n"
	if got != want {
		t.Errorf("target = %q, want %q", got, want)
	}
	// The warm-start target earns the seed's format and correctness rewards.
	if gsm8k.StrictFormatReward("", got, "") != 0.5 || gsm8k.CorrectnessReward("", got, "5") != 2 {
		t.Error("target does not score full format and correctness")
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
