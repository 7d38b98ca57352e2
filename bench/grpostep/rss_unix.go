//go:build unix

package main

import "syscall"

// peakRSSMB returns the process's peak resident set size in MB.
func peakRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // kB on Linux
}

// cpuTime returns the process's user + system CPU seconds so far: on a
// shared machine it leaves out the time other processes hold the cores.
func cpuTime() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// sysTimeFaults returns the process's system CPU seconds and minor page
// faults so far: first-touch faults on fresh memory show up in both.
func sysTimeFaults() (float64, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return float64(ru.Stime.Nano()) / 1e9, ru.Minflt
}
