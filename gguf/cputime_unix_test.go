//go:build unix

package gguf

import "syscall"

// cpuSeconds is the CPU time this process has used: benchmarks divide by
// it as well as by wall time, since on a shared machine it does not count
// the time other processes hold the cores.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
