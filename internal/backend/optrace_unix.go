//go:build unix

package backend

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU returns the CPU time of the process, all threads.
func processCPU() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0, err
	}
	return time.Duration(ts.Nano()), nil
}
