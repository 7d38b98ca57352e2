package exkit

import (
	"context"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
)

// Greedy completes each example once with greedy decoding, batch prompts
// at a time (grpo.Evaluate with no rewards), and returns the completion
// texts in order.
func Greedy(ctx context.Context, p grpo.Policy, exs []dataset.Example, maxNew, batch int) ([]string, error) {
	res, err := grpo.Evaluate(ctx, p, dataset.SliceDataset(exs), nil, grpo.EvalOptions{MaxCompletionLength: maxNew, BatchSize: batch})
	if err != nil {
		return nil, err
	}
	return res.Completions, nil
}
