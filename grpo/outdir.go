package grpo

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/grpokit/grpokit/checkpoint"
)

// runState is what the trainer knows about its run beyond the step: where
// it came from and how its recent steps went.
type runState struct {
	id      string // run id, kept across resumes (see trainerState.RunID)
	resumed bool   // restored by Resume, or has already trained in OutputDir
	// nonFinite counts the consecutive steps skipped because their loss or
	// gradient norm was not finite; 0 after a step that was applied.
	nonFinite      int
	totalNonFinite int
	lastSave       time.Time // when the last checkpoint was written (or the run started)
	savedStep      int       // step of the last checkpoint written or resumed; -1 for none
}

// saveDue reports whether a checkpoint is due after the step just taken:
// every SaveSteps steps, or SaveMinutes after the last save, but not after
// a step that was skipped as non-finite.
func (t *Trainer) saveDue() bool {
	if t.cfg.OutputDir == "" || t.rel.nonFinite > 0 {
		return false
	}
	if t.cfg.SaveSteps > 0 && t.step%t.cfg.SaveSteps == 0 {
		return true
	}
	return t.cfg.SaveMinutes > 0 && time.Since(t.rel.lastSave) >= time.Duration(t.cfg.SaveMinutes*float64(time.Minute))
}

// runID returns the run's id, drawing one for a fresh run.
func (t *Trainer) runID() string {
	if t.rel.id == "" {
		t.rel.id = newRunID()
	}
	return t.rel.id
}

// prepareOutputDir makes OutputDir ready for the run: it removes the
// temporary folders of checkpoints a crash interrupted, puts back a
// checkpoint a crash left moved aside, and refuses to mix a fresh run with
// another run's files (or, with OverwriteOutputDir, deletes those first).
func (t *Trainer) prepareOutputDir() error {
	dir := t.cfg.OutputDir
	if dir == "" {
		return nil
	}
	t.rel.lastSave = time.Now()
	if err := checkpoint.Tidy(dir, requiredFiles(t.cfg)...); err != nil {
		return fmt.Errorf("grpo: output dir: %w", err)
	}
	if t.rel.resumed {
		return nil
	}
	if err := checkpoint.Claim(dir, t.cfg.OverwriteOutputDir, t.logger()); err != nil {
		return err
	}
	t.rel.resumed = true // from now on the folder holds this run
	t.rel.lastSave = time.Now()
	return nil
}

// logger returns the logger of warnings and notes: Logger, else
// slog.Default().
func (t *Trainer) logger() *slog.Logger {
	if t.Logger == nil {
		return slog.Default()
	}
	return t.Logger
}

// progress returns the writer of progress lines: Progress, else os.Stderr.
func (t *Trainer) progress() io.Writer {
	if t.Progress == nil {
		return os.Stderr
	}
	return t.Progress
}
