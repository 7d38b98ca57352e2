//go:build !unix

package main

// peakRSSMB is unknown off unix.
func peakRSSMB() float64 { return 0 }

// cpuTime is unknown off unix.
func cpuTime() float64 { return 0 }

// sysTimeFaults is unknown off unix.
func sysTimeFaults() (float64, int64) { return 0, 0 }
