//go:build !amd64 || purego

package gemm

// registerArch adds nothing: only the portable kernel exists here.
func registerArch() {}
