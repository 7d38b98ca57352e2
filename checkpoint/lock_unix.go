//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package checkpoint

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on f without waiting (errHeld when
// another open file holds it; released by unlock or when f is closed). A
// file system that cannot lock (some network mounts: ENOLCK, ENOTSUP)
// runs unlocked rather than not at all.
func tryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errHeld
	}
	return nil
}

func unlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// LockingSupported reports whether output folders are locked here.
const LockingSupported = true
