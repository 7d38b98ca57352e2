//go:build !amd64 || purego

package gemm

// No vector decoders: Decode runs its Go loops.
