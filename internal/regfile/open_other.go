//go:build !unix

package regfile

// openFlags is 0 where there is no non-blocking open: Windows keeps named
// pipes out of the file system (\\.\pipe\), so a path in a folder is not
// one.
const openFlags = 0
