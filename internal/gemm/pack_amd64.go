//go:build amd64 && !purego

package gemm

import (
	"math"

	"golang.org/x/sys/cpu"
)

//go:noescape
func packT32AVX512(kc int, src *float32, idx *int32, dst *float32)

//go:noescape
func packA12AVX512(n16 int, src *float32, rs int, dst *float32)

//go:noescape
func packA12TAVX512(kc int, src *float32, cs int, dst *float32)

func init() {
	if cpu.X86.HasAVX512F {
		packA12Fast, packA12TFast = packA12AVX512, packA12TAVX512
	}
}

//go:noescape
func packT16AVX2(kc int, src *float32, idx *int32, dst *float32)

// gatherPacker returns a packT for kernels of nr columns (32 or 16) that
// gathers whole panels of a transposed B with one vector gather per half
// row: several times faster than scalar Go, which matters when few rows of
// A share the packed panel (decode). It declines (returns false) when the
// byte offsets would overflow the gathers' int32 indices.
func gatherPacker(nr int, gather func(kc int, src *float32, idx *int32, dst *float32)) packTFunc {
	return func(dst []float32, src []float32, cs, kc int) bool {
		if kc <= 0 || cs > math.MaxInt32/(4*nr) {
			return false
		}
		var idx [33]int32
		for j := range nr / 2 {
			idx[j] = int32(j * cs)
		}
		idx[nr/2] = int32(nr / 2 * cs)
		_ = dst[kc*nr-1]
		_ = src[(nr-1)*cs+kc-1]
		gather(kc, &src[0], &idx[0], &dst[0])
		return true
	}
}
