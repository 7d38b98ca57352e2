//go:build !linux

package backend

import "errors"

// hugePagesWanted is false off Linux: there is no madvise(MADV_HUGEPAGE).
func hugePagesWanted() bool { return false }

// adviseHuge is never called off Linux.
func adviseHuge(p, n uintptr) error { return errors.ErrUnsupported }
