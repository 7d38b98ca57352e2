package gemm

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPackA12 checks the vector packer of full 12-row panels (where the
// CPU has one) against the definition dst[q*12+i] = A[i][q], for depths
// with and without a tail of under sixteen columns and row strides wider
// than the depth.
func TestPackA12(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for _, kc := range []int{1, 15, 16, 17, 31, 32, 47, 100, 576} {
		for _, extra := range []int{0, 3, 64} {
			rs := kc + extra
			src := make([]float32, 11*rs+kc)
			for i := range src {
				src[i] = float32(r.NormFloat64())
			}
			want := make([]float32, 12*kc)
			for q := range kc {
				for i := range 12 {
					want[q*12+i] = src[i*rs+q]
				}
			}
			for _, portable := range []bool{false, true} {
				packA12Portable = portable
				got := make([]float32, 12*kc+5)
				got[12*kc] = 42 // sentinel: must not be touched
				packA12(got[:12*kc], src, rs, kc)
				packA12Portable = false
				if !slices.Equal(got[:12*kc], want) || got[12*kc] != 42 {
					t.Fatalf("kc=%d rs=%d portable=%v: packA12 differs from A[i][q] (fast packer present: %v)", kc, rs, portable, packA12Fast != nil)
				}
			}
		}
	}
}

// BenchmarkPackA packs the A of the step's products with the vector
// packers and with the Go loops (…/go): a row-major 1376×576 A (the
// forward and input-gradient products) and a transposed 1536×1376 one
// (dyᵀ of a weight gradient), 12-row panels of the whole depth; ns per
// packed element.
func BenchmarkPackA(b *testing.B) {
	for _, s := range []struct {
		name         string
		m, k, rs, cs int
	}{{"rowmajor", 1376, 576, 576, 1}, {"transposed", 1536, 1376, 1, 1536}} {
		src := make([]float32, s.m*s.k)
		for i := range src {
			src[i] = float32(i)
		}
		dst := make([]float32, (s.m+11)/12*12*s.k)
		for _, portable := range []bool{false, true} {
			name := s.name + "/vector"
			if portable {
				name = s.name + "/go"
			}
			b.Run(name, func(b *testing.B) {
				packA12Portable = portable
				defer func() { packA12Portable = false }()
				for b.Loop() {
					packA(dst, src, 0, s.rs, s.cs, s.m, s.k, 12, 0, (s.m+11)/12)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(s.m*s.k), "ns/elem")
			})
		}
	}
}

// TestPackAPanels checks packA, vector packers on and off, against its
// definition for a row-major and a transposed A with full and partial
// 12-row panels, an offset and strides wider than the block.
func TestPackAPanels(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 6))
	const m, off = 41, 7
	for _, kc := range []int{1, 3, 4, 5, 16, 33, 130} {
		for _, transposed := range []bool{false, true} {
			rs, cs := kc+2, 1
			if transposed {
				rs, cs = 1, m+5
			}
			data := make([]float32, off+(m-1)*rs+(kc-1)*cs+1)
			for i := range data {
				data[i] = float32(r.NormFloat64())
			}
			panels := (m + 11) / 12
			want := make([]float32, panels*12*kc)
			for p := range panels {
				for q := range kc {
					for i := range 12 {
						if row := p*12 + i; row < m {
							want[p*12*kc+q*12+i] = data[off+row*rs+q*cs]
						}
					}
				}
			}
			for _, portable := range []bool{false, true} {
				packA12Portable = portable
				got := make([]float32, len(want))
				for i := range got {
					got[i] = float32(i) // garbage that padding must overwrite
				}
				packA(got, data, off, rs, cs, m, kc, 12, 0, panels)
				packA12Portable = false
				if !slices.Equal(got, want) {
					t.Fatalf("kc=%d transposed=%v portable=%v: packA differs from its definition", kc, transposed, portable)
				}
			}
		}
	}
}
