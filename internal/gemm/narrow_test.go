package gemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// narrowShapes are products the narrow path serves: many rows, a rank-sized
// n, k below, at and past one depth block (kcMax), rows past a tile edge.
var narrowShapes = [][3]int{ // m, n, k
	{33, 1, 7}, {40, 16, 16}, {100, 8, 576}, {413, 16, 576}, {77, 32, 1536}, {250, 13, 700}, {64, 16, 1281},
}

// TestGemmNarrow checks the narrow path against the float64 reference in
// every layout of A it takes (row-major, offsets, batches) and of B.
func TestGemmNarrow(t *testing.T) {
	forEachImpl(t, func(t *testing.T) {
		kern := kernels.Load()
		seed := uint64(21)
		for _, s := range narrowShapes {
			m, n, k := s[0], s[1], s[2]
			if kern.strided != nil && n > kern.stridedNR {
				n = kern.stridedNR
			}
			for _, la := range []layout{{}, {off: 3}, {offsets: true, off: 2}} {
				for _, lb := range layouts {
					checkProduct(t, 1+int(seed%2), m, n, k, la, lb, seed)
					seed++
				}
			}
		}
	})
}

// TestNarrowKeepsBits checks that the narrow path gives every output the
// bits of the packed path it replaces, at every thread count.
func TestNarrowKeepsBits(t *testing.T) {
	defer func(r int) { narrowMinRows = r }(narrowMinRows)
	defer SetThreads(SetThreads(0))
	r := rand.New(rand.NewPCG(4, 4))
	forEachImpl(t, func(t *testing.T) {
		kern := kernels.Load()
		if kern.strided == nil {
			t.Skipf("%v has no strided kernels", kern.impl)
		}
		for _, s := range narrowShapes {
			m, n, k := s[0], min(s[1], kern.stridedNR), s[2]
			for _, lb := range []layout{{}, {transposed: true}} {
				a, _ := layout{}.make(r, 2, m, k)
				b, _ := lb.make(r, 2, k, n)
				if !useNarrow(kern, m, n, a) {
					t.Fatalf("%d×%d×%d does not take the narrow path", m, n, k)
				}
				narrowMinRows = 1 << 30
				want := make([]float32, 2*m*n)
				Gemm(2, m, n, k, a, b, want)
				narrowMinRows = dotMaxRows + 1
				for _, nt := range []int{1, 2, 3} {
					SetThreads(nt)
					c := make([]float32, 2*m*n)
					Gemm(2, m, n, k, a, b, c)
					for j := range c {
						if math.Float32bits(c[j]) != math.Float32bits(want[j]) {
							t.Fatalf("%d×%d×%d B %v, %d threads: C[%d] = %v, packed path %v", m, n, k, lb, nt, j, c[j], want[j])
						}
					}
				}
			}
		}
	})
}

// TestNarrowTaken pins which products take the narrow path.
func TestNarrowTaken(t *testing.T) {
	kern := kernels.Load()
	if kern.strided == nil {
		t.Skipf("%v has no strided kernels", kern.impl)
	}
	rowMajor := Mat{RS: 576, CS: 1}
	for _, c := range []struct {
		m, n int
		a    Mat
		want bool
	}{
		{33, 16, rowMajor, true},
		{3164, kern.stridedNR, rowMajor, true},
		{32, 16, rowMajor, false},                   // the few-row paths' (RowClass)
		{3164, kern.stridedNR + 1, rowMajor, false}, // more than one panel
		{3164, 16, Mat{RS: 1, CS: 3164}, false},     // A's rows not contiguous
	} {
		if got := useNarrow(kern, c.m, c.n, c.a); got != c.want {
			t.Errorf("useNarrow(m=%d, n=%d, A %+v) = %v, want %v", c.m, c.n, c.a, got, c.want)
		}
	}
}
