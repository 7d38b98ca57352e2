//go:build !unix

package main

import (
	"os"
	"time"
)

// childPeakRSS is unknown (0) where wait4 does not report it.
func childPeakRSS(*os.ProcessState) int64 { return 0 }

// processCPU is unknown (0) where getrusage is missing.
func processCPU() time.Duration { return 0 }
