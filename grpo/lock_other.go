//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package grpo

import "os"

// tryLock does not lock where flock is missing (see ErrOutputDirLocked).
func tryLock(*os.File) error { return nil }

func unlock(*os.File) {}

// lockingSupported reports whether output folders are locked here.
const lockingSupported = false
