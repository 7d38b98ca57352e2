package gemm

import "testing"

// TestGemmStrided checks x·Wᵀ products at the strided kernels' row counts
// (17 to 32 rows of x, one or two panels) against the float64 reference:
// every tile height of W (n mod 12, mod 6), k below, at and past the
// 16-step unroll, every layout of A, batches, and products large enough
// to split over goroutines.
func TestGemmStrided(t *testing.T) {
	forEachImpl(t, func(t *testing.T) {
		forEachStridedMode(func() {
			seed := uint64(11)
			for _, m := range []int{1, 3, 16, 17, 24, 31, 32} {
				for _, n := range []int{1, 5, 12, 13, 25, 47} {
					for _, k := range []int{1, 7, 15, 16, 17, 33, 100} {
						la := layouts[int(seed)%len(layouts)]
						checkProduct(t, 1+int(seed%2), m, n, k, la, layout{transposed: true}, seed)
						seed++
					}
				}
			}
			for _, la := range layouts {
				checkProduct(t, 2, 32, 301, 600, la, layout{transposed: true}, 5)
				checkProduct(t, 1, 20, 1000, 1536, la, layout{transposed: true, offsets: true}, 6)
			}
		})
	})
}

// TestStridedTaken makes sure the decode shapes take the strided path on
// CPUs that have it (otherwise TestGemmStrided would not test it).
func TestStridedTaken(t *testing.T) {
	kern := kernels.Load()
	if kern.strided == nil {
		t.Skipf("%v has no strided kernels", kern.impl)
	}
	from := stridedFrom(kern)
	for _, m := range []int{from, 17, 32} {
		if !useStrided(kern, m, Mat{RS: 1, CS: 576}) {
			t.Errorf("m=%d x·Wᵀ does not take the strided path", m)
		}
	}
	for _, m := range []int{from - 1, 33} {
		if useStrided(kern, m, Mat{RS: 1, CS: 576}) {
			t.Errorf("m=%d takes the strided path", m)
		}
	}
	if useStrided(kern, 32, Mat{RS: 576, CS: 1}) {
		t.Errorf("row-major B takes the strided path")
	}
}

// forEachStridedMode runs f with the strided path off and taken for any
// row count it can serve.
func forEachStridedMode(f func()) {
	defer func(r int) { stridedMinRows = r }(stridedMinRows)
	for _, lim := range []int{1 << 30, 1} {
		stridedMinRows = lim
		f()
	}
}
