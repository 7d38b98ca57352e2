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

//go:noescape
func packA6AVX(n4 int, src *float32, rs int, dst *float32)

//go:noescape
func packA6TAVX(kc int, src *float32, cs int, dst *float32)

func init() {
	if cpu.X86.HasAVX512F {
		packA12Fast, packA12TFast = packA12AVX512, packA12TAVX512
	}
	if cpu.X86.HasAVX {
		packA6Fast, packA6TFast = packA6AVX, packA6TAVX
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

//go:noescape
func packT16TrAVX2(n8 int, src *float32, cs int, dst *float32)

// packT16 is the AVX2 kernels' packT: eight rows of the panel at a time
// by register transposes of contiguous loads (Zen 3's gathers cost about
// twice as much), the last kc%8 rows by gathers.
var packT16 = transposingPacker(16, 8, packT16TrAVX2, gatherPacker(16, packT16AVX2))

//go:noescape
func packT32TrAVX512(n16 int, src *float32, cs int, dst *float32)

// packTGatherOnly makes the transposing packers gather every row
// (benchmarks compare).
var packTGatherOnly bool

// packT32 is the AVX-512 kernels' packT: sixteen rows of the panel at a
// time by register transposes of contiguous loads (about a third of the
// gathers' cost on the forward products' weights), the last kc%16 rows
// by gathers.
var packT32 = transposingPacker(32, 16, packT32TrAVX512, gatherPacker(32, packT32AVX512))

// transposingPacker returns a packT for nr-column panels that packs
// block rows of the panel at a time with transpose (n counts blocks) and
// the last kc%block rows, or all of them under packTGatherOnly, with
// gather.
func transposingPacker(nr, block int, transpose func(n int, src *float32, cs int, dst *float32), gather packTFunc) packTFunc {
	return func(dst, src []float32, cs, kc int) bool {
		if kc <= 0 || cs > math.MaxInt32/(4*nr) {
			return false
		}
		n := kc / block
		if packTGatherOnly || n == 0 {
			return gather(dst, src, cs, kc)
		}
		_ = dst[kc*nr-1]
		_ = src[(nr-1)*cs+kc-1]
		transpose(n, &src[0], cs, &dst[0])
		if q0 := block * n; q0 < kc {
			return gather(dst[q0*nr:], src[q0:], cs, kc-q0)
		}
		return true
	}
}
