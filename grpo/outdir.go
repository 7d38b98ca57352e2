package grpo

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrOutputDirInUse is wrapped by Train's error when a run that was not
// resumed would write into an OutputDir holding another run's checkpoints.
// Resume that run, set Config.OverwriteOutputDir, or choose another
// folder. (The metrics of a run killed before its first checkpoint, which
// cannot be resumed, are renamed aside instead, and the new run starts.)
var ErrOutputDirInUse = errors.New("output folder holds another run")

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
	if err := tidyOutputDir(dir); err != nil {
		return fmt.Errorf("grpo: output dir: %w", err)
	}
	if t.rel.resumed {
		return nil
	}
	found, err := runFiles(dir)
	if err != nil {
		return fmt.Errorf("grpo: output dir: %w", err)
	}
	if len(found) > 0 && !t.cfg.OverwriteOutputDir && !hasCheckpoint(found) {
		// Only the logs of a run killed before its first checkpoint: nothing
		// can resume it, so the new run starts, with those logs kept aside.
		stamp := time.Now().UTC().Format("20060102T150405")
		for _, f := range found {
			old := filepath.Join(dir, f.name)
			if err := os.Rename(old, old+"."+stamp+".old"); err != nil {
				return fmt.Errorf("grpo: output dir: %w", err)
			}
			fmt.Fprintf(t.progress(), "grpo: %s had no checkpoint to resume; kept its %s as %s.%s.old\n", dir, f.name, f.name, stamp)
		}
		syncDir(dir)
		found = nil
	}
	if len(found) > 0 {
		if !t.cfg.OverwriteOutputDir {
			return inUse(dir, found)
		}
		for _, f := range found {
			if err := os.RemoveAll(filepath.Join(dir, f.name)); err != nil {
				return fmt.Errorf("grpo: overwrite output dir: %w", err)
			}
		}
		syncDir(dir)
	}
	t.rel.resumed = true // from now on the folder holds this run
	t.rel.lastSave = time.Now()
	return nil
}

// CheckOutputDir returns the error a fresh (not resumed) run's Train would
// return in dir: wrapping ErrOutputDirLocked while a running trainer holds
// dir, or ErrOutputDirInUse when dir holds another run's checkpoints and
// overwrite (Config.OverwriteOutputDir) is false; nil when such a run may
// start there. Train makes this check when it starts; a program that
// writes into OutputDir before that (a tiny model's initial weights, a warm
// start) calls CheckOutputDir first, so that a refused run has changed
// nothing. It writes nothing.
func CheckOutputDir(dir string, overwrite bool) error {
	if dir == "" {
		return nil
	}
	if err := checkUnlocked(dir); err != nil {
		return err
	}
	if overwrite {
		return nil
	}
	found, err := runFiles(dir)
	if err != nil {
		return fmt.Errorf("grpo: output dir: %w", err)
	}
	if !hasCheckpoint(found) {
		return nil // logs alone are kept aside by Train, not in the way
	}
	return inUse(dir, found)
}

// OutputDirInUseError is the error of a fresh run refused by an OutputDir
// holding another run; it wraps ErrOutputDirInUse. Its fields let a
// command say what to do in its own flags.
type OutputDirInUseError struct {
	Dir   string // the output folder
	Found string // what the other run left, e.g. "metrics.jsonl with 4 lines; checkpoint-4"
}

// Error says what was found and the library's ways out.
func (e *OutputDirInUseError) Error() string {
	return fmt.Sprintf("grpo: %s holds another run (%s): resume it (LatestCheckpoint, then Trainer.Resume), "+
		"set Config.OverwriteOutputDir (TRL: overwrite_output_dir) to delete it, or choose another OutputDir: %v",
		e.Dir, e.Found, ErrOutputDirInUse)
}

// Unwrap returns ErrOutputDirInUse.
func (e *OutputDirInUseError) Unwrap() error { return ErrOutputDirInUse }

// inUse is the error for a fresh run refused by dir's files.
func inUse(dir string, found []runFile) error {
	return &OutputDirInUseError{Dir: dir, Found: describe(found)}
}

// hasCheckpoint reports whether found holds a checkpoint folder.
func hasCheckpoint(found []runFile) bool {
	for _, f := range found {
		if f.lines == 0 {
			return true
		}
	}
	return false
}

// progress returns the writer of progress and log lines.
func (t *Trainer) progress() io.Writer {
	if t.Progress == nil {
		return os.Stderr
	}
	return t.Progress
}

// runFile is a file or folder of a run in an output folder.
type runFile struct {
	name  string
	lines int // JSONL lines, for metrics and rollouts
}

// runFiles lists what a run left in dir: a non-empty metrics.jsonl or
// rollouts.jsonl and checkpoint folders (complete or not).
func runFiles(dir string) ([]runFile, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var found []runFile
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == MetricsFile || name == RolloutsFile:
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			n := 0
			for _, line := range strings.Split(string(data), "\n") {
				if strings.TrimSpace(line) != "" {
					n++
				}
			}
			if n > 0 {
				found = append(found, runFile{name: name, lines: n})
			}
		case e.IsDir():
			if _, _, ok := parseCheckpointName(name); ok {
				found = append(found, runFile{name: name})
			}
		}
	}
	return found, nil
}

// describe says what runFiles found, for an error message.
func describe(found []runFile) string {
	var parts, ckpts []string
	for _, f := range found {
		if f.lines > 0 {
			parts = append(parts, fmt.Sprintf("%s with %d lines", f.name, f.lines))
		} else {
			ckpts = append(ckpts, f.name)
		}
	}
	if len(ckpts) > 0 {
		parts = append(parts, strings.Join(ckpts, ", "))
	}
	return strings.Join(parts, "; ")
}

// tidyOutputDir removes the temporary folders of interrupted checkpoint
// writes and settles copies a re-save moved aside: put back when their
// step has no complete checkpoint, deleted otherwise.
func tidyOutputDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() {
			continue
		}
		if strings.HasPrefix(name, tmpPrefix) {
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				return err
			}
			continue
		}
		step, aside, ok := parseCheckpointName(name)
		if !ok || !aside {
			continue
		}
		old := filepath.Join(dir, name)
		final := filepath.Join(dir, fmt.Sprintf("%s%d", checkpointPrefix, step))
		if _, err := verifyCheckpoint(final, false); err == nil {
			if err := os.RemoveAll(old); err != nil {
				return err
			}
			continue
		}
		if _, err := verifyCheckpoint(old, false); err != nil {
			continue // neither is complete: leave both for a person to look at
		}
		if err := os.RemoveAll(final); err != nil {
			return err
		}
		if err := os.Rename(old, final); err != nil {
			return err
		}
	}
	syncDir(dir)
	return nil
}
