//go:build unix

package main

import (
	"os"
	"syscall"
)

// childPeakRSS returns a finished child's peak resident set size in bytes
// (wait4's ru_maxrss, in kB on Linux).
func childPeakRSS(ps *os.ProcessState) int64 {
	if ps == nil {
		return 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10
	}
	return 0
}
