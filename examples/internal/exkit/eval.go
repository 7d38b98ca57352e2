package exkit

import (
	"context"
	"fmt"

	"github.com/grpokit/grpokit/grpo"
)

// Greedy completes each example once with greedy decoding, batch prompts
// at a time, and returns the completion texts in order.
func Greedy(ctx context.Context, p grpo.Policy, exs []grpo.Example, maxNew, batch int) ([]string, error) {
	out := make([]string, 0, len(exs))
	for start := 0; start < len(exs); start += batch {
		part := exs[start:min(start+batch, len(exs))]
		comps, err := p.Generate(ctx, part, 1, grpo.GenerateOptions{MaxCompletionLength: maxNew})
		if err != nil {
			return nil, fmt.Errorf("evaluate: %w", err)
		}
		for _, c := range comps {
			out = append(out, c.Text)
		}
	}
	return out, nil
}
