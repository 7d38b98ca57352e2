package grpo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrOutputDirLocked is wrapped by the error of Train, TrainEnv and
// CheckOutputDir when a trainer that is running (in this process or
// another) holds OutputDir: two runs writing the same metrics and
// checkpoints would spoil both. The lock is an advisory file lock on
// OutputDir/.grpokit.lock, released (and the file removed) when the run
// returns; a killed run's lock ends with its process, so it is never
// stale, though its file stays until the next run there ends. Platforms
// without flock (see lock_unix.go) are not locked.
var ErrOutputDirLocked = errors.New("output folder in use by a running trainer")

// lockName is the lock file in OutputDir.
const lockName = ".grpokit.lock"

// lockOutputDir takes dir's lock for a run, creating dir and the lock file
// as needed, and returns its release.
func lockOutputDir(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("grpo: output dir: %w", err)
	}
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("grpo: output dir lock: %w", err)
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
		return nil, lockError(dir, errLocked)
	}
	return func() {
		if held, err := f.Stat(); err == nil && sameFileAt(path, held) {
			os.Remove(path)
		}
		unlock(f)
		f.Close()
	}, nil
}

// sameFileAt reports whether path names the file fi describes.
func sameFileAt(path string, fi os.FileInfo) bool {
	st, err := os.Stat(path)
	return err == nil && os.SameFile(st, fi)
}

// checkUnlocked reports ErrOutputDirLocked when a running trainer holds
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
	if errors.Is(err, errLocked) {
		return fmt.Errorf("grpo: %s is in use by a running trainer (%s is locked): wait for that run to end, or choose another OutputDir: %w",
			dir, lockName, ErrOutputDirLocked)
	}
	return fmt.Errorf("grpo: output dir lock: %w", err)
}

// errLocked is tryLock's answer when another holder has the lock.
var errLocked = errors.New("locked")
