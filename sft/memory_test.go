package sft_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/sft"
)

// TestTrainChecksMemoryPlan: before its first step a supervised run on an
// LMPolicy prints its memory plan (a training pass alone: no KV cache)
// and, when the plan's peak exceeds Options.Memory, stops with an
// *memplan.OutOfMemoryError naming the settings that lower it; a budget
// with Off set prints the plan and trains.
func TestTrainChecksMemoryPlan(t *testing.T) {
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
	cfg := sft.DefaultConfig()
	cfg.BatchSize, cfg.MaxCompletionLength, cfg.MaxPromptLength = 4, 3, 8
	tr, err := sft.New(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		budget  memplan.Budget
		wantOOM bool
		steps   int // steps taken after the call
	}{
		{"over budget", memplan.Budget{Bytes: 1 << 20, Source: "test"}, true, 0},
		{"check off", memplan.Budget{Bytes: 1 << 20, Source: "test", Off: true}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var progress bytes.Buffer
			_, err := tr.Train(ctx, data, sft.Options{Steps: 1, Progress: &progress, Memory: &tc.budget})
			var oom *memplan.OutOfMemoryError
			if got := errors.As(err, &oom); got != tc.wantOOM {
				t.Fatalf("err %v: out-of-memory %v, want %v", err, got, tc.wantOOM)
			}
			if tc.wantOOM {
				msg := err.Error()
				for _, s := range []string{"per_device_train_batch_size (4)", "max_completion_length", "gradient_checkpointing"} {
					if !strings.Contains(msg, s) {
						t.Errorf("error lacks %q: %s", s, msg)
					}
				}
				if strings.Contains(msg, "num_generations") {
					t.Errorf("error names num_generations: %s", msg)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if tr.StepCount() != tc.steps {
				t.Errorf("%d steps taken, want %d", tr.StepCount(), tc.steps)
			}
			out := progress.String()
			for _, s := range []string{"memory plan:", "supervised", "none: no generation", "of 1 MB available (test)"} {
				if !strings.Contains(out, s) {
					t.Errorf("progress lacks %q:\n%s", s, out)
				}
			}
		})
	}
}
