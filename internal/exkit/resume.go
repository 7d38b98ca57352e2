package exkit

import (
	"errors"
	"fmt"
	"io"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/grpo"
)

// Checkpoint returns the checkpoint a run continues from: with -resume,
// the newest complete checkpoint-N in c.Out; "" without -resume, or when
// -resume finds no checkpoint at all (a first run with -resume simply
// starts). Checkpoints that are all broken are an error, never a fresh
// start over them.
func (c *Config) Checkpoint() (string, error) {
	if !c.Resume {
		return "", nil
	}
	path, err := grpo.LatestCheckpoint(c.Out)
	if errors.Is(err, checkpoint.ErrNoCheckpoint) {
		return "", nil
	}
	return path, err
}

// Resume restores t from the checkpoint at path, if path is not "", and
// says so on out. Call it before the first evaluation so that the
// "before" figures are those of the state training continues from.
func Resume(t *grpo.Trainer, path string, out io.Writer) error {
	if path == "" {
		return nil
	}
	if err := t.Resume(path); err != nil {
		return err
	}
	fmt.Fprintf(out, "resumed from %s (step %d)\n", path, t.Step())
	return nil
}
