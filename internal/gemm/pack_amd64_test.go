//go:build amd64 && !purego

package gemm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestPackT checks the transposing packers of transposed-B panels, the
// AVX-512 kernels' 32 columns and the AVX2 kernels' 16 (register
// transposes plus gathers for the last rows, and gathers alone), against
// dst[q*nr+j] = src[j*cs+q].
func TestPackT(t *testing.T) {
	packers := transposingPackers()
	if len(packers) == 0 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(8, 9))
	for _, p := range packers {
		for _, kc := range []int{1, 7, 8, 9, 15, 16, 17, 32, 33, 100, 576} {
			for _, extra := range []int{0, 5, 300} {
				cs := kc + extra
				src := make([]float32, (p.nr-1)*cs+kc)
				for i := range src {
					src[i] = float32(r.NormFloat64())
				}
				want := make([]float32, p.nr*kc)
				for q := range kc {
					for j := range p.nr {
						want[q*p.nr+j] = src[j*cs+q]
					}
				}
				for _, gatherOnly := range []bool{false, true} {
					packTGatherOnly = gatherOnly
					got := make([]float32, p.nr*kc+3)
					got[p.nr*kc] = 42 // sentinel: must not be touched
					ok := p.pack(got[:p.nr*kc], src, cs, kc)
					packTGatherOnly = false
					if !ok || !slices.Equal(got[:p.nr*kc], want) || got[p.nr*kc] != 42 {
						t.Fatalf("nr=%d kc=%d cs=%d gatherOnly=%v: the packer (ok=%v) differs from src[j*cs+q]", p.nr, kc, cs, gatherOnly, ok)
					}
				}
			}
		}
	}
}

// transposingPackerCase is one transposing packer and its panel width.
type transposingPackerCase struct {
	nr   int
	pack packTFunc
}

// transposingPackers returns the transposing packers this CPU can run.
func transposingPackers() []transposingPackerCase {
	var ps []transposingPackerCase
	if cpu.X86.HasAVX2 {
		ps = append(ps, transposingPackerCase{16, packT16})
	}
	if cpu.X86.HasAVX512F {
		ps = append(ps, transposingPackerCase{32, packT32})
	}
	return ps
}

// BenchmarkPackT packs the weight of the step's forward MLP product
// (1536 rows of 576: x·Wᵀ's B) into 16- and 32-column panels, by register
// transposes and by gathers alone (…/gather): ns per packed element.
func BenchmarkPackT(b *testing.B) {
	const n, k = 1536, 576
	src := make([]float32, n*k)
	for i := range src {
		src[i] = float32(i)
	}
	dst := make([]float32, n*k)
	for _, p := range transposingPackers() {
		for _, gatherOnly := range []bool{false, true} {
			name := fmt.Sprintf("nr%d/transpose", p.nr)
			if gatherOnly {
				name = fmt.Sprintf("nr%d/gather", p.nr)
			}
			b.Run(name, func(b *testing.B) {
				packTGatherOnly = gatherOnly
				defer func() { packTGatherOnly = false }()
				for b.Loop() {
					for t := range n / p.nr {
						p.pack(dst[t*p.nr*k:(t+1)*p.nr*k], src[t*p.nr*k:], k, k)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*k), "ns/elem")
			})
		}
	}
}
