//go:build !amd64 || purego

package gemm

// l2Bytes returns 0: the L2 size is not read on this build.
func l2Bytes() int { return 0 }
