//go:build !unix

package backend

import (
	"errors"
	"time"
)

// processCPU is not available off unix.
func processCPU() (time.Duration, error) {
	return 0, errors.New("no process CPU clock on this system")
}
