package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrLocked is wrapped by the error of Train, TrainEnv and
// CheckOutputDir when a trainer that is running (in this process or
// another) holds OutputDir: two runs writing the same metrics and
// checkpoints would spoil both. The lock is an advisory file lock on
// OutputDir/.grpokit.lock, released (and the file removed) when the run
// returns; a killed run's lock ends with its process, so it is never
// stale, though its file stays until the next run there ends. Platforms
// without flock (see lock_unix.go) are not locked.
var ErrLocked = errors.New("output folder in use by a running trainer")

// lockName is the lock file in OutputDir.
const lockName = ".grpokit.lock"

// Lock takes output folder dir's lock, creating dir and the lock file as
// needed. A program locks the folder before writing anything of its own
// there (a model it builds, a warm start), so that a second program
// started on the same folder stops before it spoils the first one's
// files, and hands the lock to the trainer (grpo.Trainer.OutputLock);
// otherwise Trainer.Train takes it for the run. While it is held, Lock
// and CheckOutputDir return an error wrapping ErrLocked.
func Lock(dir string) (*OutputLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint: output dir: %w", err)
	}
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: output dir lock: %w", err)
	}
	if err := tryLock(f); err != nil {
		f.Close()
		return nil, lockError(dir, err)
	}
	// The releasing run removes the file (the folder is left as it was);
	// a lock taken on a file removed meanwhile locks nothing, so the file
	// at path must be the one locked.
	if held, err := f.Stat(); err != nil || !sameFileAt(path, held) {
		unlock(f)
		f.Close()
		return nil, lockError(dir, errHeld)
	}
	return &OutputLock{dir: dir, path: path, f: f}, nil
}

// OutputLock is a held output folder lock (see Lock).
type OutputLock struct {
	dir, path string
	f         *os.File
}

// Dir returns the folder the lock holds.
func (l *OutputLock) Dir() string { return l.dir }

// Release releases the lock and removes its file; releasing it again, or
// a nil lock, does nothing.
func (l *OutputLock) Release() {
	if l == nil || l.f == nil {
		return
	}
	if held, err := l.f.Stat(); err == nil && sameFileAt(l.path, held) {
		os.Remove(l.path)
	}
	unlock(l.f)
	l.f.Close()
	l.f = nil
}

// sameFileAt reports whether path names the file fi describes.
func sameFileAt(path string, fi os.FileInfo) bool {
	st, err := os.Stat(path)
	return err == nil && os.SameFile(st, fi)
}

// checkUnlocked reports ErrLocked when a running trainer holds
// dir's lock. It writes nothing: without a lock file there is no run.
func checkUnlocked(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR, 0)
	if err != nil {
		return nil // no lock file: no run; an unreadable one is Train's to report
	}
	defer f.Close()
	if err := tryLock(f); err != nil {
		return lockError(dir, err)
	}
	unlock(f)
	return nil
}

func lockError(dir string, err error) error {
	if errors.Is(err, errHeld) {
		return fmt.Errorf("checkpoint: %s is in use by a running trainer (%s is locked): wait for that run to end, or choose another OutputDir: %w",
			dir, lockName, ErrLocked)
	}
	return fmt.Errorf("checkpoint: output dir lock: %w", err)
}

// errHeld is tryLock's answer when another holder has the lock.
var errHeld = errors.New("locked")
