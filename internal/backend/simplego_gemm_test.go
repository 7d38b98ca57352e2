package backend

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/grpokit/grpokit/internal/gemm"
)

// dotCase is one DotGeneral: operand dimensions and axes, as graph.DotGeneral takes them.
type dotCase struct {
	name                  string
	lhsDims, rhsDims      []int
	lhsContract, lhsBatch []int
	rhsContract, rhsBatch []int
}

func dotCases() []dotCase {
	var cs []dotCase
	for _, s := range [][3]int{{1, 1, 1}, {3, 17, 5}, {17, 31, 65}, {65, 3, 31}, {31, 65, 17}} {
		m, k, n := s[0], s[1], s[2]
		cs = append(cs,
			dotCase{fmt.Sprintf("AB_%dx%dx%d", m, k, n), []int{m, k}, []int{k, n}, []int{1}, nil, []int{0}, nil},
			dotCase{fmt.Sprintf("ABt_%dx%dx%d", m, k, n), []int{m, k}, []int{n, k}, []int{1}, nil, []int{1}, nil},
			dotCase{fmt.Sprintf("AtB_%dx%dx%d", m, k, n), []int{k, m}, []int{k, n}, []int{0}, nil, []int{0}, nil},
			dotCase{fmt.Sprintf("AtBt_%dx%dx%d", m, k, n), []int{k, m}, []int{n, k}, []int{0}, nil, []int{1}, nil},
		)
	}
	return append(cs,
		// Attention scores and values: [B, H, T, hd] with two batch axes.
		dotCase{"attn_scores", []int{2, 3, 17, 8}, []int{2, 3, 19, 8}, []int{3}, []int{0, 1}, []int{3}, []int{0, 1}},
		dotCase{"attn_values", []int{2, 3, 17, 19}, []int{2, 3, 19, 8}, []int{3}, []int{0, 1}, []int{2}, []int{0, 1}},
		// Batch axis in the middle and last.
		dotCase{"batch_middle", []int{5, 4, 7}, []int{7, 4, 6}, []int{2}, []int{1}, []int{0}, []int{1}},
		dotCase{"batch_last", []int{5, 7, 4}, []int{7, 6, 4}, []int{1}, []int{2}, []int{0}, []int{2}},
		// Batch axes listed out of memory order or apart: per-matrix offsets.
		dotCase{"batch_swapped", []int{2, 3, 5, 7}, []int{3, 2, 7, 4}, []int{3}, []int{1, 0}, []int{2}, []int{0, 1}},
		dotCase{"batch_apart_BTHd", []int{2, 5, 3, 8}, []int{2, 7, 3, 8}, []int{3}, []int{0, 2}, []int{3}, []int{0, 2}},
		// Two contracting axes, contiguous on the left, scattered on the right.
		dotCase{"two_contracting", []int{6, 3, 5}, []int{5, 7, 3}, []int{1, 2}, nil, []int{2, 0}, nil},
		// Grouped-query attention ([B, T, kv, rep, hd] queries): cross axes
		// T and rep apart (copied, contracting axis contiguous), and the
		// key gradient's contracting axes T and rep apart (gathered).
		dotCase{"gqa_scores", []int{2, 5, 3, 2, 8}, []int{2, 7, 3, 8}, []int{4}, []int{0, 2}, []int{3}, []int{0, 2}},
		dotCase{"gqa_key_grad", []int{2, 5, 3, 2, 8}, []int{2, 3, 5, 2, 7}, []int{1, 3}, []int{0, 2}, []int{2, 3}, []int{0, 1}},
		// Cross axes split by the contracting one.
		dotCase{"split_cross", []int{4, 9, 3}, []int{9, 5}, []int{1}, nil, []int{0}, nil},
		// Matrix times vector and vector dot vector.
		dotCase{"matvec", []int{33, 40}, []int{40}, []int{1}, nil, []int{0}, nil},
		dotCase{"dot", []int{40}, []int{40}, []int{0}, nil, []int{0}, nil},
	)
}

// refDotGeneral is a plain float64 DotGeneral over multi-indices.
func refDotGeneral(c dotCase, lhs, rhs []float32) (out []float64, dims []int) {
	kind := func(rank int, contract, batch []int) []int {
		k := make([]int, rank) // 0 cross, 1 contracting, 2 batch
		for _, a := range contract {
			k[a] = 1
		}
		for _, a := range batch {
			k[a] = 2
		}
		return k
	}
	lk, rk := kind(len(c.lhsDims), c.lhsContract, c.lhsBatch), kind(len(c.rhsDims), c.rhsContract, c.rhsBatch)
	var lCross, rCross []int
	for a, t := range lk {
		if t == 0 {
			lCross = append(lCross, a)
		}
	}
	for a, t := range rk {
		if t == 0 {
			rCross = append(rCross, a)
		}
	}
	for _, a := range c.lhsBatch {
		dims = append(dims, c.lhsDims[a])
	}
	for _, a := range lCross {
		dims = append(dims, c.lhsDims[a])
	}
	for _, a := range rCross {
		dims = append(dims, c.rhsDims[a])
	}
	var kdims []int
	for _, a := range c.lhsContract {
		kdims = append(kdims, c.lhsDims[a])
	}
	flat := func(dims, idx []int) int {
		f := 0
		for i, d := range dims {
			f = f*d + idx[i]
		}
		return f
	}
	li, ri := make([]int, len(c.lhsDims)), make([]int, len(c.rhsDims))
	forEach(dims, func(o []int) {
		p := 0
		for i, a := range c.lhsBatch {
			li[a], ri[c.rhsBatch[i]] = o[p], o[p]
			p++
		}
		for _, a := range lCross {
			li[a] = o[p]
			p++
		}
		for _, a := range rCross {
			ri[a] = o[p]
			p++
		}
		var sum float64
		forEach(kdims, func(kk []int) {
			for i, a := range c.lhsContract {
				li[a], ri[c.rhsContract[i]] = kk[i], kk[i]
			}
			sum += float64(lhs[flat(c.lhsDims, li)]) * float64(rhs[flat(c.rhsDims, ri)])
		})
		out = append(out, sum)
	})
	return out, dims
}

// forEach calls f with every index of dims in row-major order.
func forEach(dims []int, f func(idx []int)) {
	idx := make([]int, len(dims))
	for {
		f(idx)
		ax := len(dims) - 1
		for ; ax >= 0; ax-- {
			if idx[ax]++; idx[ax] < dims[ax] {
				break
			}
			idx[ax] = 0
		}
		if ax < 0 {
			return
		}
	}
}

func randomFlat(r *rand.Rand, dims []int) []float32 {
	n := 1
	for _, d := range dims {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// TestDotGeneralThroughGraph runs every case through graph.DotGeneral on the
// go backend with each kernel family forced and compares with refDotGeneral.
func TestDotGeneralThroughGraph(t *testing.T) {
	t.Setenv(EnvVar, "")
	b, err := New("go")
	if err != nil {
		t.Fatal(err)
	}
	if err := FastDotGeneral(); err != nil {
		t.Fatalf("gemm hook not active: %v", err)
	}
	calls := fastCalls.Load()
	defer func() {
		if fastCalls.Load() == calls {
			t.Error("no DotGeneral went through gemm")
		}
	}()
	r := rand.New(rand.NewPCG(3, 4))
	for _, impl := range []gemm.Impl{gemm.Portable, gemm.AVX2, gemm.AVX512} {
		if !gemm.Supported(impl) {
			t.Logf("%v not supported here; skipped", impl)
			continue
		}
		prev, _ := gemm.Use(impl)
		for _, c := range dotCases() {
			t.Run(impl.String()+"/"+c.name, func(t *testing.T) {
				lhs, rhs := randomFlat(r, c.lhsDims), randomFlat(r, c.rhsDims)
				want, dims := refDotGeneral(c, lhs, rhs)
				got, err := graph.ExecOnce(b, func(x, y *graph.Node) *graph.Node {
					return graph.DotGeneral(x, c.lhsContract, c.lhsBatch, y, c.rhsContract, c.rhsBatch)
				}, tensors.FromFlatDataAndDimensions(lhs, c.lhsDims...), tensors.FromFlatDataAndDimensions(rhs, c.rhsDims...))
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got.Shape().Dimensions) != fmt.Sprint(dims) && !(len(dims) == 0 && got.Shape().Rank() == 0) {
					t.Fatalf("shape %v, want %v", got.Shape().Dimensions, dims)
				}
				flat := tensors.MustCopyFlatData[float32](got)
				for i, w := range want {
					if math.Abs(float64(flat[i])-w) > 1e-5*(1+math.Abs(w))*math.Sqrt(float64(len(lhs))) {
						t.Fatalf("element %d = %g, want %g", i, flat[i], w)
					}
				}
			})
		}
		gemm.Use(prev)
	}
}

// TestDotGeneralFloat64UsesStock checks that other dtypes still go through
// SimpleGo's own executor and stay correct.
func TestDotGeneralFloat64UsesStock(t *testing.T) {
	b := Must("go")
	got := graph.MustExecOnce(b, func(x *graph.Node) *graph.Node {
		return graph.Dot(x, x)
	}, [][]float64{{1, 2}, {3, 4}}).Value().([][]float64)
	if got[0][0] != 7 || got[0][1] != 10 || got[1][0] != 15 || got[1][1] != 22 {
		t.Fatalf("got %v", got)
	}
}

func TestGroupStride(t *testing.T) {
	dims := []int{2, 3, 1, 5}
	strides := []int{15, 5, 5, 1}
	for _, tc := range []struct {
		axes   []int
		stride int
		ok     bool
	}{
		{nil, 0, true},
		{[]int{2}, 0, true},       // only a size-1 axis
		{[]int{0, 1}, 5, true},    // contiguous, in order
		{[]int{1, 2, 3}, 1, true}, // size-1 axis in between is ignored
		{[]int{1, 0}, 0, false},   // out of memory order
		{[]int{0, 3}, 0, false},   // a gap
	} {
		s, ok := groupStride(dims, strides, tc.axes)
		if s != tc.stride || ok != tc.ok {
			t.Errorf("groupStride(%v) = %d, %v; want %d, %v", tc.axes, s, ok, tc.stride, tc.ok)
		}
	}
}
