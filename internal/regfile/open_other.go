//go:build !unix

package regfile

import "os"

// openFlags is 0 where there is no non-blocking open: Windows keeps named
// pipes out of the file system (\\.\pipe\), so a path in a folder is not
// one.
const openFlags = 0

// blocking has nothing to undo without openFlags.
func blocking(*os.File) error { return nil }
