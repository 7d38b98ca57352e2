//go:build unix

package regfile

import (
	"os"
	"syscall"
)

// openFlags makes opening a named pipe return at once instead of waiting
// for a writer (or, for writing, a reader).
const openFlags = syscall.O_NONBLOCK

// blocking clears O_NONBLOCK on f, a regular file, once its type is
// known: reads and writes then behave as on a plain open on every file
// system.
func blocking(f *os.File) error {
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := c.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}
