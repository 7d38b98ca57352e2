package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/grpokit/grpokit/internal/regfile"
)

// The run logs a trainer writes in its output folder, beside the
// checkpoints: the metrics of every step, and the rollouts when it logs
// completions.
const (
	MetricsFile  = "metrics.jsonl"
	RolloutsFile = "rollouts.jsonl"
)

// ErrOutputDirInUse is wrapped by grpo.Trainer.Train's error when a run that was not
// resumed would write into an OutputDir holding another run's checkpoints.
// Resume that run, set grpo.Config.OverwriteOutputDir, or choose another
// folder. (The metrics of a run killed before its first checkpoint, which
// cannot be resumed, are renamed aside instead, and the new run starts.)
var ErrOutputDirInUse = errors.New("output folder holds another run")

// CheckOutputDir returns the error a fresh (not resumed) run's grpo.Trainer.Train would
// return in dir: wrapping ErrLocked while a running trainer holds
// dir, or ErrOutputDirInUse when dir holds another run's checkpoints and
// overwrite (grpo.Config.OverwriteOutputDir) is false; nil when such a run may
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
	return checkRunFiles(dir, overwrite)
}

// CheckOutputDir is the package's CheckOutputDir for the program that holds
// the folder's lock: the folder's files alone are checked (taking the lock
// first, then checking, leaves no moment in which a second program could
// pass the check too).
func (l *OutputLock) CheckOutputDir(overwrite bool) error {
	return checkRunFiles(l.dir, overwrite)
}

// checkRunFiles is CheckOutputDir's rule on the files of dir.
func checkRunFiles(dir string, overwrite bool) error {
	if overwrite {
		return nil
	}
	found, err := runFiles(dir)
	if err != nil {
		return fmt.Errorf("checkpoint: output dir: %w", err)
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
	return fmt.Sprintf("checkpoint: %s holds another run (%s): resume it (LatestCheckpoint, then Trainer.Resume), "+
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

// Claim makes output folder dir ready for a fresh (not resumed) run: the
// metrics and rollouts of a run killed before its first checkpoint, which
// cannot be resumed, are renamed aside (logged to logger at level Warn;
// nil: slog.Default()); another run's checkpoints are an
// *OutputDirInUseError, unless overwrite is set, which deletes that run's
// files first.
func Claim(dir string, overwrite bool, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	found, err := runFiles(dir)
	if err != nil {
		return fmt.Errorf("checkpoint: output dir: %w", err)
	}
	if len(found) > 0 && !overwrite && !hasCheckpoint(found) {
		// Only the logs of a run killed before its first checkpoint: nothing
		// can resume it, so the new run starts, with those logs kept aside.
		stamp := time.Now().UTC().Format("20060102T150405")
		for _, f := range found {
			old := filepath.Join(dir, f.name)
			if err := os.Rename(old, old+"."+stamp+".old"); err != nil {
				return fmt.Errorf("checkpoint: output dir: %w", err)
			}
			logger.Warn(fmt.Sprintf("checkpoint: the output folder's earlier run has no checkpoint to resume; kept its %s aside", f.name),
				"dir", dir, "file", f.name, "aside", f.name+"."+stamp+".old")
		}
		SyncDir(dir)
		found = nil
	}
	if len(found) > 0 {
		if !overwrite {
			return inUse(dir, found)
		}
		for _, f := range found {
			if err := os.RemoveAll(filepath.Join(dir, f.name)); err != nil {
				return fmt.Errorf("checkpoint: overwrite output dir: %w", err)
			}
		}
		SyncDir(dir)
	}
	return nil
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
			n, err := countLines(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			if n > 0 {
				found = append(found, runFile{name: name, lines: n})
			}
		case e.IsDir():
			if _, _, ok := ParseName(name); ok {
				found = append(found, runFile{name: name})
			}
		}
	}
	return found, nil
}

// countLines counts the lines of path that are not blank, reading it
// through regfile (a named pipe or a device in its place is an error, not
// a wait or an endless read).
func countLines(path string) (int, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, text := 0, false // text: the current line has a character other than a space
	buf := make([]byte, 64<<10)
	for {
		k, err := f.Read(buf)
		for _, c := range buf[:k] {
			switch c {
			case '\n':
				if text {
					n++
				}
				text = false
			case ' ', '\t', '\r', '\v', '\f':
			default:
				text = true
			}
		}
		if errors.Is(err, io.EOF) {
			if text {
				n++
			}
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
	}
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

// Tidy removes the temporary folders of interrupted checkpoint
// writes (Write) and settles copies a re-save moved aside: put back when their
// step has no complete checkpoint, deleted otherwise.
func Tidy(dir string, need ...string) error {
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
		step, aside, ok := ParseName(name)
		if !ok || !aside {
			continue
		}
		old := filepath.Join(dir, name)
		final := filepath.Join(dir, Name(step))
		if err := Verify(final, false, need...); err == nil {
			if err := os.RemoveAll(old); err != nil {
				return err
			}
			continue
		}
		if err := Verify(old, false, need...); err != nil {
			continue // neither is complete: leave both for a person to look at
		}
		if err := os.RemoveAll(final); err != nil {
			return err
		}
		if err := os.Rename(old, final); err != nil {
			return err
		}
	}
	SyncDir(dir)
	return nil
}
