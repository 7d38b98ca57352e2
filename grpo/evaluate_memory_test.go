package grpo_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
)

// TestEvaluateChecksMemoryPlan: with EvalOptions.Memory, Evaluate plans
// generation alone (rows of BatchSize × Generations) and stops before any
// generation with an *memplan.OutOfMemoryError when the plan exceeds the
// budget; Off, or no Memory, evaluates.
func TestEvaluateChecksMemoryPlan(t *testing.T) {
	m, tok, err := model.NewTiny(t.TempDir(), []string{"say", "cat", "dog"}, model.TinyConfig{Hidden: 32, Layers: 1}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := grpo.NewLMPolicy(m, nil, tok, &grpo.LMPolicyOptions{NoSpecialTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	data := dataset.SliceDataset{{Prompt: "say cat", Answer: "cat"}, {Prompt: "say dog", Answer: "dog"}}
	for _, tc := range []struct {
		name    string
		budget  *memplan.Budget
		wantOOM bool
	}{
		{"over budget", &memplan.Budget{Bytes: 1 << 20, Source: "test"}, true},
		{"check off", &memplan.Budget{Bytes: 1 << 20, Source: "test", Off: true}, false},
		{"no plan", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := grpo.Evaluate(context.Background(), p, data, nil, grpo.EvalOptions{MaxCompletionLength: 2, BatchSize: 2, Generations: 3, Memory: tc.budget, GCLimit: true})
			var oom *memplan.OutOfMemoryError
			if got := errors.As(err, &oom); got != tc.wantOOM {
				t.Fatalf("err %v: out-of-memory %v, want %v", err, got, tc.wantOOM)
			}
			if tc.wantOOM {
				if msg := err.Error(); !strings.Contains(msg, "the rows generated at once (6)") || strings.Contains(msg, "gradient_checkpointing") {
					t.Errorf("advice: %s", msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Completions) != 6 {
				t.Errorf("%d completions, want 6", len(res.Completions))
			}
		})
	}
}
