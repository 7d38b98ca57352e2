package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestRowClassKeepsRowBits multiplies the same rows of A by the same B with
// every row count up to 70 and checks that row counts of one RowClass give
// each row's outputs the same bits, for a transposed float32 B (the
// strided and dot paths), a row-major one (packed GEMM) and a transposed
// bfloat16 one (dot and packed with decoding), with k below and above the
// packed kernels' depth block, on every kernel family of this CPU. It
// also checks that classes are runs of consecutive row counts, which is
// what lets a caller move within one.
func TestRowClassKeepsRowBits(t *testing.T) {
	for _, impl := range []Impl{Portable, AVX2, AVX512} {
		if !Supported(impl) {
			continue
		}
		t.Run(impl.String(), func(t *testing.T) {
			prev, err := Use(impl)
			if err != nil {
				t.Fatal(err)
			}
			defer Use(prev)
			testRowClass(t)
		})
	}
}

func testRowClass(t *testing.T) {
	const maxM, n = 70, 40
	seen := map[int]int{} // class → last row count seen in it
	for m := 1; m <= maxM; m++ {
		c := RowClass(m)
		if last, ok := seen[c]; ok && last != m-1 {
			t.Fatalf("class %d holds row counts %d and %d but not those between", c, last, m)
		}
		seen[c] = m
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{100, 1500} {
		a := make([]float32, maxM*k)
		w := make([]float32, n*k)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range w {
			w[i] = float32(r.NormFloat64())
		}
		q, _ := lowpOf(t, r, BF16, n*k, k)
		for _, b := range []struct {
			name string
			mat  Mat
		}{
			{"transposed f32", Mat{Data: w, RS: 1, CS: k}},
			{"row-major f32", Mat{Data: w, RS: n, CS: 1}},
			{"transposed bf16", Mat{Q: q, RS: 1, CS: k}},
		} {
			first := map[int][]float32{} // class → C of its smallest row count
			for m := 1; m <= maxM; m++ {
				got := make([]float32, m*n)
				Gemm(1, m, n, k, Mat{Data: a, RS: k, CS: 1}, b.mat, got)
				want, ok := first[RowClass(m)]
				if !ok {
					first[RowClass(m)] = got
					continue
				}
				rows := min(m, len(want)/n)
				for i := range rows * n {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("k=%d, %s B: m=%d (class %d) row %d col %d = %v, %d rows of the class gave %v",
							k, b.name, m, RowClass(m), i/n, i%n, got[i], len(want)/n, want[i])
					}
				}
			}
		}
	}
	t.Log(fmt.Sprint("classes (last row count of each): ", seen))
}
