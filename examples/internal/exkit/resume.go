package exkit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/grpokit/grpokit/grpo"
)

// Checkpoint returns the checkpoint a run continues from: with -resume,
// the newest checkpoint-N in c.Out; "" without -resume, or when -resume
// finds no checkpoint (a first run with -resume simply starts).
func (c *Config) Checkpoint() (string, error) {
	if !c.Resume {
		return "", nil
	}
	path, err := grpo.LatestCheckpoint(c.Out)
	if errors.Is(err, fs.ErrNotExist) {
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
