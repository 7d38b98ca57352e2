//go:build !amd64 || purego

package gemm

// transposeFull12x32 has no fast form here.
func transposeFull12x32(ct *[stridedTile]float32, rows, m int, c []float32, ldc int) bool {
	return false
}
