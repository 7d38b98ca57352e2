package backend

import (
	"bytes"
	"os"

	"golang.org/x/sys/unix"
)

// hugePagesWanted reports whether anonymous memory needs
// madvise(MADV_HUGEPAGE) to get transparent huge pages: the kernel's
// setting is "madvise". With "always" it gives them anyway, with "never"
// (or no THP support) not at all.
func hugePagesWanted() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && bytes.Contains(b, []byte("[madvise]"))
}

// adviseHuge marks [p, p+n), page-aligned addresses of mapped memory, for
// transparent huge pages.
func adviseHuge(p, n uintptr) error {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, p, n, unix.MADV_HUGEPAGE)
	if errno != 0 {
		return errno
	}
	return nil
}
