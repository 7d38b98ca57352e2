package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// layout builds a Mat holding batch×rows×cols values in one of the layouts a
// DotGeneral operand can have: row-major or transposed, batch axis first or
// last, with an offset into a larger buffer.
type layout struct {
	transposed, batchLast bool
	off                   int
	offsets               bool // describe batches by Mat.Batch, in reverse order
}

func (l layout) String() string {
	return fmt.Sprintf("T%v/bl%v/off%d/offs%v", l.transposed, l.batchLast, l.off, l.offsets)
}

// make returns the view and a plain accessor for checking.
func (l layout) make(r *rand.Rand, batch, rows, cols int) (Mat, func(b, i, j int) float32) {
	size := batch * rows * cols
	data := make([]float32, l.off+size+3)
	for i := range data {
		data[i] = float32(r.NormFloat64())
	}
	m := Mat{Data: data, Off: l.off}
	// Innermost-first strides over (i, j, b) in the chosen order.
	ri, rj := cols, 1
	if l.transposed {
		ri, rj = 1, rows
	}
	if l.batchLast {
		m.BS, m.RS, m.CS = 1, ri*batch, rj*batch
	} else {
		m.BS, m.RS, m.CS = rows*cols, ri, rj
	}
	if l.offsets {
		for b := range batch {
			m.Batch = append(m.Batch, (batch-1-b)*m.BS)
		}
		m.BS = -12345 // must be ignored
	}
	return m, func(b, i, j int) float32 { return data[m.start(b)+i*m.RS+j*m.CS] }
}

var layouts = []layout{{}, {transposed: true}, {batchLast: true, off: 5}, {transposed: true, batchLast: true, off: 1}, {offsets: true, off: 2}}

// checkProduct compares Gemm against a float64 dot product per element; the
// bound is the usual one for float32 summation of k terms.
func checkProduct(t *testing.T, batch, m, n, k int, la, lb layout, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	a, av := la.make(r, batch, m, k)
	b, bv := lb.make(r, batch, k, n)
	c := make([]float32, batch*m*n+1)
	c[batch*m*n] = 42 // sentinel: must not be touched
	for i := range batch * m * n {
		c[i] = float32(math.NaN()) // every element must be written
	}
	Gemm(batch, m, n, k, a, b, c)
	if c[batch*m*n] != 42 {
		t.Fatalf("wrote past C")
	}
	eps := float64(k+2) * 1.2e-7
	for bi := range batch {
		for i := range m {
			for j := range n {
				var want, mag float64
				for p := range k {
					x := float64(av(bi, i, p)) * float64(bv(bi, p, j))
					want += x
					mag += math.Abs(x)
				}
				got := float64(c[(bi*m+i)*n+j])
				if !(math.Abs(got-want) <= eps*mag+1e-30) {
					t.Fatalf("batch=%d m=%d n=%d k=%d A:%v B:%v: C[%d][%d][%d] = %g, want %g (±%g)",
						batch, m, n, k, la, lb, bi, i, j, got, want, eps*mag)
				}
			}
		}
	}
}

// forEachImpl runs f with every kernel family this CPU supports forced.
func forEachImpl(t *testing.T, f func(t *testing.T)) {
	for _, impl := range []Impl{Portable, AVX2, AVX512} {
		t.Run(impl.String(), func(t *testing.T) {
			if !Supported(impl) {
				t.Skipf("%v not supported on this CPU", impl)
			}
			prev, err := Use(impl)
			if err != nil {
				t.Fatal(err)
			}
			defer Use(prev)
			f(t)
		})
	}
}

func TestGemmOddSizes(t *testing.T) {
	sizes := []int{1, 3, 17, 31, 65}
	forEachImpl(t, func(t *testing.T) {
		seed := uint64(1)
		for _, m := range sizes {
			for _, n := range sizes {
				for _, k := range sizes {
					la, lb := layouts[int(seed)%len(layouts)], layouts[int(seed/4)%len(layouts)]
					checkProduct(t, 1+int(seed%3), m, n, k, la, lb, seed)
					seed++
				}
			}
		}
	})
}

func TestGemmLayouts(t *testing.T) {
	forEachImpl(t, func(t *testing.T) {
		forEachBMode(func() {
			for _, la := range layouts {
				for _, lb := range layouts {
					checkProduct(t, 3, 29, 70, 45, la, lb, 11)
				}
			}
		})
	})
}

// TestGemmDot forces the dot-product path (A·Bᵀ with few rows) on and off
// over odd sizes, k around the kernels' 16- and 32-wide steps, and every
// layout of A and B.
func TestGemmDot(t *testing.T) {
	forEachImpl(t, func(t *testing.T) {
		forEachDotMode(func() {
			seed := uint64(3)
			for _, m := range []int{1, 2, 3, 4, 5, 8, 13} {
				for _, n := range []int{1, 3, 4, 7, 33} {
					for _, k := range []int{1, 15, 16, 17, 32, 47, 64, 100} {
						la, lb := layouts[int(seed)%len(layouts)], layouts[int(seed/3)%len(layouts)]
						lb.transposed = seed%4 != 0
						checkProduct(t, 1+int(seed%2), m, n, k, la, lb, seed)
						seed++
					}
				}
			}
			for _, la := range layouts {
				for _, lb := range layouts {
					checkProduct(t, 3, 9, 70, 45, la, lb, 5)
				}
			}
		})
	})
}

// forEachDotMode runs f with the dot-product path off and taken for any
// number of rows.
func forEachDotMode(f func()) {
	defer func(r int) { dotMaxRows = r }(dotMaxRows)
	for _, lim := range []int{0, 1 << 30} {
		dotMaxRows = lim
		f()
	}
}

// forEachBMode runs f with row-major B read in place and packed.
func forEachBMode(f func()) {
	defer func(r, s int) { inPlaceMaxRows, inPlaceMaxStride = r, s }(inPlaceMaxRows, inPlaceMaxStride)
	for _, lim := range []int{0, 1 << 30} {
		inPlaceMaxRows, inPlaceMaxStride = lim, lim
		f()
	}
}

// TestGemmBlocking uses sizes past the block sizes and the parallel
// thresholds, so every split and the accumulation over K blocks run.
func TestGemmBlocking(t *testing.T) {
	if testing.Short() {
		t.Skip("slow reference product")
	}
	defer func(kc, mc, nc int, ro bool) { kcMax, mcMax, ncMax, rowsOuter = kc, mc, nc, ro }(kcMax, mcMax, ncMax, rowsOuter)
	kcMax, mcMax, ncMax = 48, 24, 64
	for _, nt := range []int{1, 2, 3} {
		old := SetThreads(nt)
		forEachImpl(t, func(t *testing.T) {
			forEachBMode(func() {
				rowsOuter = nt%2 == 0
				for i, s := range [][4]int{
					{1, 7, 300, 130},   // dot path, columns split
					{1, 200, 300, 130}, // split columns
					{1, 300, 20, 110},  // split rows
					{2, 77, 90, 100},   // batch split
					{3, 64, 140, 97},   // batch not divisible: split inside
				} {
					la, lb := layouts[i%len(layouts)], layouts[(i+nt)%len(layouts)]
					checkProduct(t, s[0], s[1], s[2], s[3], la, lb, uint64(i))
				}
			})
		})
		SetThreads(old)
	}
}

func TestGemmEmpty(t *testing.T) {
	c := []float32{1, 2, 3, 4}
	Gemm(1, 2, 2, 0, Mat{}, Mat{}, c)
	for _, v := range c {
		if v != 0 {
			t.Fatalf("k=0 must zero C, got %v", c)
		}
	}
	Gemm(0, 2, 2, 2, Mat{}, Mat{}, nil) // nothing to do, no panic
}

func TestGemmOutOfBoundsPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("want a panic for a view outside its data")
		}
	}()
	a := Mat{Data: make([]float32, 5), RS: 3, CS: 1}
	b := Mat{Data: make([]float32, 9), RS: 3, CS: 1}
	Gemm(1, 2, 3, 3, a, b, make([]float32, 6))
}

func TestUseUnknown(t *testing.T) {
	if _, err := Use(Impl(99)); err == nil {
		t.Fatal("want an error for an unknown kernel")
	}
	if got := Impl(99).String(); got != "Impl(99)" {
		t.Fatal(got)
	}
}

// TestBlockingKeepsBits checks that the blocking choices other than the
// depth block (mc, nc, the loop order, reading B in place or packed, the
// thread count) give every output the same bits: they only reorder whole
// tiles, so tuneForL2 may pick them per CPU without changing any result.
func TestBlockingKeepsBits(t *testing.T) {
	defer func(mc, nc, ir, is int, ro bool) {
		mcMax, ncMax, inPlaceMaxRows, inPlaceMaxStride, rowsOuter = mc, nc, ir, is, ro
	}(mcMax, ncMax, inPlaceMaxRows, inPlaceMaxStride, rowsOuter)
	defer SetThreads(SetThreads(0))
	r := rand.New(rand.NewPCG(9, 9))
	forEachImpl(t, func(t *testing.T) {
		for _, s := range [][4]int{{200, 300, 700, 0}, {300, 130, 1300, 1}, {100, 1000, 90, 0}} {
			m, n, k := s[0], s[1], s[2]
			a, _ := layout{transposed: s[3] == 1}.make(r, 1, m, k)
			b, _ := layout{}.make(r, 1, k, n)
			var want []float32
			for i, v := range []struct {
				mc, nc, nt int
				ro, pack   bool
			}{{144, 1024, 1, false, false}, {24, 64, 2, true, true}, {72, 96, 3, false, true}, {500, 320, 2, true, false}} {
				mcMax, ncMax, rowsOuter = v.mc, v.nc, v.ro
				inPlaceMaxRows, inPlaceMaxStride = 1<<30, 1<<30
				if v.pack {
					inPlaceMaxRows, inPlaceMaxStride = 0, 0
				}
				SetThreads(v.nt)
				c := make([]float32, m*n)
				Gemm(1, m, n, k, a, b, c)
				if i == 0 {
					want = c
					continue
				}
				for j := range c {
					if math.Float32bits(c[j]) != math.Float32bits(want[j]) {
						t.Fatalf("%d×%d×%d, blocking %+v: C[%d] = %v, want %v", m, n, k, v, j, c[j], want[j])
					}
				}
			}
		}
	})
}
