package gemm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPackAFull checks the packers of full panels, 12 rows (AVX-512's)
// and 6 (AVX2's), vector where the CPU has them and Go, against the
// definition dst[q*mr+i] = A[i][q], for depths with and without a tail
// the vector packers leave to Go and row strides wider than the depth.
func TestPackAFull(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for _, c := range []struct {
		mr   int
		pack func(panel, src []float32, rs, kc int)
	}{{6, packA6}, {12, packA12}} {
		mr, pack := c.mr, c.pack
		for _, kc := range []int{1, 3, 4, 5, 15, 16, 17, 31, 32, 47, 100, 576} {
			for _, extra := range []int{0, 3, 64} {
				rs := kc + extra
				src := make([]float32, (mr-1)*rs+kc)
				for i := range src {
					src[i] = float32(r.NormFloat64())
				}
				want := make([]float32, mr*kc)
				for q := range kc {
					for i := range mr {
						want[q*mr+i] = src[i*rs+q]
					}
				}
				for _, portable := range []bool{false, true} {
					packAPortable = portable
					got := make([]float32, mr*kc+5)
					got[mr*kc] = 42 // sentinel: must not be touched
					pack(got[:mr*kc], src, rs, kc)
					packAPortable = false
					if !slices.Equal(got[:mr*kc], want) || got[mr*kc] != 42 {
						t.Fatalf("mr=%d kc=%d rs=%d portable=%v: the packed panel differs from A[i][q]", mr, kc, rs, portable)
					}
				}
			}
		}
	}
}

// BenchmarkPackA packs the A of the step's products with the vector
// packers and with the Go loops (…/go): a row-major 1376×576 A (the
// forward and input-gradient products) and a transposed 1536×1376 one
// (dyᵀ of a weight gradient), in 12-row (AVX-512) and 6-row (AVX2) panels
// of the whole depth; ns per packed element.
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
		for _, mr := range []int{12, 6} {
			for _, portable := range []bool{false, true} {
				name := fmt.Sprintf("%s/mr%d/vector", s.name, mr)
				if portable {
					name = fmt.Sprintf("%s/mr%d/go", s.name, mr)
				}
				b.Run(name, func(b *testing.B) {
					packAPortable = portable
					defer func() { packAPortable = false }()
					panels := (s.m + mr - 1) / mr
					for b.Loop() {
						packA(dst, src, 0, s.rs, s.cs, s.m, s.k, mr, 0, panels)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(s.m*s.k), "ns/elem")
				})
			}
		}
	}
}

// TestPackAPanels checks packA, vector packers on and off, against its
// definition for a row-major and a transposed A with full and partial
// 12-row and 6-row panels, an offset and strides wider than the block.
func TestPackAPanels(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 6))
	const m, off = 41, 7
	for _, mr := range []int{6, 12} {
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
				panels := (m + mr - 1) / mr
				want := make([]float32, panels*mr*kc)
				for p := range panels {
					for q := range kc {
						for i := range mr {
							if row := p*mr + i; row < m {
								want[p*mr*kc+q*mr+i] = data[off+row*rs+q*cs]
							}
						}
					}
				}
				for _, portable := range []bool{false, true} {
					packAPortable = portable
					got := make([]float32, len(want))
					for i := range got {
						got[i] = float32(i) // garbage that padding must overwrite
					}
					packA(got, data, off, rs, cs, m, kc, mr, 0, panels)
					packAPortable = false
					if !slices.Equal(got, want) {
						t.Fatalf("mr=%d kc=%d transposed=%v portable=%v: packA differs from its definition", mr, kc, transposed, portable)
					}
				}
			}
		}
	}
}
