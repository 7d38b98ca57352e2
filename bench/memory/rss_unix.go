//go:build unix

package main

import (
	"os"
	"syscall"
	"time"
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

// processCPU returns this process's user + system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
