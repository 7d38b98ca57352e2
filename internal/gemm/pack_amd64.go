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

// gather16 packs 16-column panels by gathers.
var gather16 = gatherPacker(16, packT16AVX2)

// packT16 is the AVX2 kernels' packT: eight rows of the panel at a time
// by register transposes of contiguous loads (Zen 3's gathers cost
// several times more), the last kc%8 rows by gathers.
func packT16(dst, src []float32, cs, kc int) bool {
	if kc <= 0 || cs > math.MaxInt32/(4*16) {
		return false
	}
	n8 := kc / 8
	if packTGatherOnly || n8 == 0 {
		return gather16(dst, src, cs, kc)
	}
	_ = dst[kc*16-1]
	_ = src[15*cs+kc-1]
	packT16TrAVX2(n8, &src[0], cs, &dst[0])
	if q0 := 8 * n8; q0 < kc {
		return gather16(dst[q0*16:], src[q0:], cs, kc-q0)
	}
	return true
}

//go:noescape
func packT32TrAVX512(n16 int, src *float32, cs int, dst *float32)

// gather32 packs 32-column panels by gathers.
var gather32 = gatherPacker(32, packT32AVX512)

// packTGatherOnly makes packT32 gather every row (benchmarks compare).
var packTGatherOnly bool

// packT32 is the AVX-512 kernels' packT: sixteen rows of the panel at a
// time by register transposes of contiguous loads (about a third of the
// gathers' cost on the forward products' weights), the last kc%16 rows
// by gathers.
func packT32(dst, src []float32, cs, kc int) bool {
	gather := gather32
	if kc <= 0 || cs > math.MaxInt32/(4*32) {
		return false
	}
	n16 := kc / 16
	if packTGatherOnly || n16 == 0 {
		return gather(dst, src, cs, kc)
	}
	_ = dst[kc*32-1]
	_ = src[31*cs+kc-1]
	packT32TrAVX512(n16, &src[0], cs, &dst[0])
	if q0 := 16 * n16; q0 < kc {
		return gather(dst[q0*32:], src[q0:], cs, kc-q0)
	}
	return true
}
