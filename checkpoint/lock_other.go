//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package checkpoint

import "os"

// tryLock does not lock where flock is missing (see ErrLocked).
func tryLock(*os.File) error { return nil }

func unlock(*os.File) {}

// LockingSupported reports whether output folders are locked here.
const LockingSupported = false
