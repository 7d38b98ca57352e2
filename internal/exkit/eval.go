package exkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/memplan"
)

// Greedy completes each example once with greedy decoding, batch prompts
// at a time (grpo.Evaluate with no rewards), and returns the completion
// texts in order. With a budget (a Setup's Memory) the evaluation's
// memory plan is checked against it and bounds Go's heap while it runs.
func Greedy(ctx context.Context, p grpo.Policy, exs []dataset.Example, maxNew, batch int, budget *memplan.Budget) ([]string, error) {
	res, err := grpo.Evaluate(ctx, p, dataset.SliceDataset(exs), nil, grpo.EvalOptions{MaxCompletionLength: maxNew, BatchSize: batch,
		Memory: budget, GCLimit: budget != nil})
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

// WriteJSONLines writes each row as one line of JSON to the file at path,
// replacing it (the -rows files the TRL scripts read).
func WriteJSONLines[T any](path string, rows []T) error {
	var b []byte
	for i, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("%s: row %d: %w", path, i, err)
		}
		b = append(append(b, line...), '\n')
	}
	return os.WriteFile(path, b, 0o644)
}

// RowPrompt is ex's prompt as a -rows file gives it: its chat messages
// when it has them, else its plain text.
func RowPrompt(ex dataset.Example) any {
	if len(ex.Messages) > 0 {
		return ex.Messages
	}
	return ex.Prompt
}
