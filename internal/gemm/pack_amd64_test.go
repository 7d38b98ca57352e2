//go:build amd64 && !purego

package gemm

import (
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestPackT32 checks the AVX-512 packer of 32-column panels of a
// transposed B (register transposes plus gathers for the last rows, and
// gathers alone) against dst[q*32+j] = src[j*cs+q].
func TestPackT32(t *testing.T) {
	if !cpu.X86.HasAVX512F {
		t.Skip("no AVX-512")
	}
	r := rand.New(rand.NewPCG(8, 9))
	for _, kc := range []int{1, 15, 16, 17, 32, 33, 100, 576} {
		for _, extra := range []int{0, 5, 300} {
			cs := kc + extra
			src := make([]float32, 31*cs+kc)
			for i := range src {
				src[i] = float32(r.NormFloat64())
			}
			want := make([]float32, 32*kc)
			for q := range kc {
				for j := range 32 {
					want[q*32+j] = src[j*cs+q]
				}
			}
			for _, gatherOnly := range []bool{false, true} {
				packTGatherOnly = gatherOnly
				got := make([]float32, 32*kc+3)
				got[32*kc] = 42 // sentinel: must not be touched
				ok := packT32(got[:32*kc], src, cs, kc)
				packTGatherOnly = false
				if !ok || !slices.Equal(got[:32*kc], want) || got[32*kc] != 42 {
					t.Fatalf("kc=%d cs=%d gatherOnly=%v: packT32 (ok=%v) differs from src[j*cs+q]", kc, cs, gatherOnly, ok)
				}
			}
		}
	}
}

// TestPackT16 checks the AVX2 packer of 16-column panels of a transposed
// B (register transposes plus gathers for the last rows, and gathers
// alone) against dst[q*16+j] = src[j*cs+q].
func TestPackT16(t *testing.T) {
	if !cpu.X86.HasAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(8, 10))
	for _, kc := range []int{1, 7, 8, 9, 15, 16, 17, 33, 100, 576} {
		for _, extra := range []int{0, 5, 300} {
			cs := kc + extra
			src := make([]float32, 15*cs+kc)
			for i := range src {
				src[i] = float32(r.NormFloat64())
			}
			want := make([]float32, 16*kc)
			for q := range kc {
				for j := range 16 {
					want[q*16+j] = src[j*cs+q]
				}
			}
			for _, gatherOnly := range []bool{false, true} {
				packTGatherOnly = gatherOnly
				got := make([]float32, 16*kc+3)
				got[16*kc] = 42 // sentinel: must not be touched
				ok := packT16(got[:16*kc], src, cs, kc)
				packTGatherOnly = false
				if !ok || !slices.Equal(got[:16*kc], want) || got[16*kc] != 42 {
					t.Fatalf("kc=%d cs=%d gatherOnly=%v: packT16 (ok=%v) differs from src[j*cs+q]", kc, cs, gatherOnly, ok)
				}
			}
		}
	}
}

// BenchmarkPackT32 packs the weight of the step's forward MLP product
// (1536 rows of 576: x·Wᵀ's B) into 32-column panels, by register
// transposes and by gathers alone (…/gather): ns per packed element.
func BenchmarkPackT32(b *testing.B) {
	if !cpu.X86.HasAVX512F {
		b.Skip("no AVX-512")
	}
	const n, k = 1536, 576
	src := make([]float32, n*k)
	for i := range src {
		src[i] = float32(i)
	}
	dst := make([]float32, n*k)
	for _, gatherOnly := range []bool{false, true} {
		name := "transpose"
		if gatherOnly {
			name = "gather"
		}
		b.Run(name, func(b *testing.B) {
			packTGatherOnly = gatherOnly
			defer func() { packTGatherOnly = false }()
			for b.Loop() {
				for t := range n / 32 {
					packT32(dst[t*32*k:(t+1)*32*k], src[t*32*k:], k, k)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*k), "ns/elem")
		})
	}
}

// BenchmarkPackT16 is BenchmarkPackT32 for the AVX2 kernels' 16-column
// panels.
func BenchmarkPackT16(b *testing.B) {
	if !cpu.X86.HasAVX2 {
		b.Skip("no AVX2")
	}
	const n, k = 1536, 576
	src := make([]float32, n*k)
	for i := range src {
		src[i] = float32(i)
	}
	dst := make([]float32, n*k)
	for _, gatherOnly := range []bool{false, true} {
		name := "transpose"
		if gatherOnly {
			name = "gather"
		}
		b.Run(name, func(b *testing.B) {
			packTGatherOnly = gatherOnly
			defer func() { packTGatherOnly = false }()
			for b.Loop() {
				for t := range n / 16 {
					packT16(dst[t*16*k:(t+1)*16*k], src[t*16*k:], k, k)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*k), "ns/elem")
		})
	}
}
