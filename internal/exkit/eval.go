package exkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

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

// AppendJSONLine adds v as one line of JSON to the file at path (created
// if missing), as the programs log each evaluation to eval.jsonl.
func AppendJSONLine(path string, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return AppendText(path, string(line)+"\n")
}

// AppendText adds text to the end of the file at path (created if
// missing).
func AppendText(path, text string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}
