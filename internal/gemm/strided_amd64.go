//go:build amd64 && !purego

package gemm

//go:noescape
func transpose12x32AVX512(src *float32, dst *float32, ldd int)

// transposeFull12x32 writes a full 12×32 tile (12 rows of W, 32 rows of
// x) into C with the AVX-512 transposer; it reports false when the tile is
// partial, for the portable transposeTile.
func transposeFull12x32(ct *[stridedTile]float32, rows, m int, c []float32, ldc int) bool {
	if rows != 12 || m != 32 {
		return false
	}
	_ = c[31*ldc+11]
	transpose12x32AVX512(&ct[0], &c[0], ldc)
	return true
}
