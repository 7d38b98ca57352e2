//go:build unix

package regfile

import "syscall"

// openFlags makes opening a named pipe return at once instead of waiting
// for a writer; reads of a regular file ignore the flag.
const openFlags = syscall.O_NONBLOCK
