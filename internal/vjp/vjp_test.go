package vjp

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/grpokit/grpokit/internal/backend"
)

func randTensor(r *rand.Rand, dims ...int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(r.NormFloat64())
	}
	return tensors.FromFlatDataAndDimensions(data, dims...)
}

// gradients computes d sum(DotGeneral(lhs, rhs) * w) / d{lhs, rhs}.
func gradients(t *testing.T, lhsDims, rhsDims []int, lc, lb, rc, rb []int, seed uint64) [2][]float32 {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	lhs, rhs := randTensor(r, lhsDims...), randTensor(r, rhsDims...)
	out := graph.MustExecOnceN(backend.Must(""), func(l, rr *graph.Node) []*graph.Node {
		y := graph.DotGeneral(l, lc, lb, rr, rc, rb)
		w := graph.Sin(graph.ConvertDType(graph.IotaFull(l.Graph(), y.Shape()), y.DType()))
		loss := graph.ReduceAllSum(graph.Mul(y, w))
		return graph.Gradient(loss, l, rr)
	}, lhs, rhs)
	return [2][]float32{tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1])}
}

func TestDotGeneralGradMatchesStock(t *testing.T) {
	cases := []struct {
		name           string
		lhs, rhs       []int
		lc, lb, rc, rb []int
	}{
		{"matmul", []int{3, 4}, []int{4, 5}, []int{1}, nil, []int{0}, nil},
		{"linear [B,T,in]x[out,in]", []int{2, 3, 4}, []int{5, 4}, []int{2}, nil, []int{1}, nil},
		{"attention scores", []int{2, 3, 2, 2, 4}, []int{2, 5, 2, 4}, []int{4}, []int{0, 2}, []int{3}, []int{0, 2}},
		{"attention values", []int{2, 2, 3, 2, 5}, []int{2, 5, 2, 4}, []int{4}, []int{0, 1}, []int{1}, []int{0, 2}},
		{"two contracting axes swapped", []int{3, 4, 2}, []int{2, 5, 4}, []int{1, 2}, nil, []int{2, 0}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := gradients(t, tc.lhs, tc.rhs, tc.lc, tc.lb, tc.rc, tc.rb, 7)
			Register()
			defer func() { // restore stock for the next case's reference
				graph.VJPRegistration[graph.NodeTypeDotGeneral] = stockForTest
				once = sync.Once{}
			}()
			got := gradients(t, tc.lhs, tc.rhs, tc.lc, tc.lb, tc.rc, tc.rb, 7)
			for k := range 2 {
				for i := range want[k] {
					if d := math.Abs(float64(got[k][i] - want[k][i])); d > 1e-4 {
						t.Fatalf("operand %d element %d: got %v want %v", k, i, got[k][i], want[k][i])
					}
				}
			}
		})
	}
}

func TestDotAxesReadsNode(t *testing.T) {
	g := graph.NewGraph(backend.Must(""), "axes")
	l := graph.Parameter(g, "l", randTensor(rand.New(rand.NewPCG(1, 1)), 2, 3, 4).Shape())
	r := graph.Parameter(g, "r", randTensor(rand.New(rand.NewPCG(1, 1)), 2, 4, 5).Shape())
	ax, ok := dotAxes(graph.DotGeneral(l, []int{2}, []int{0}, r, []int{1}, []int{0}))
	if !ok || ax.lhsContract[0] != 2 || ax.lhsBatch[0] != 0 || ax.rhsContract[0] != 1 || ax.rhsBatch[0] != 0 {
		t.Fatalf("dotAxes = %+v, %v", ax, ok)
	}
	if _, ok := dotAxes(graph.Add(l, l)); ok {
		t.Fatal("dotAxes accepted an Add node")
	}
}

func TestSliceGradient(t *testing.T) {
	Register()
	x := tensors.FromValue([][]float32{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}})
	out := graph.MustExecOnceN(backend.Must(""), func(x *graph.Node) []*graph.Node {
		s := graph.Slice(x, graph.AxisRange(1, 3), graph.AxisRange(1, 3)) // rows 1-2, cols 1-2
		w := graph.Const(x.Graph(), [][]float32{{1, 2}, {3, 4}})
		return graph.Gradient(graph.ReduceAllSum(graph.Mul(s, w)), x)
	}, x)
	got := out[0].Value().([][]float32)
	want := [][]float32{{0, 0, 0, 0}, {0, 1, 2, 0}, {0, 3, 4, 0}}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("gradient = %v, want %v", got, want)
		}
	}
}

// TestWeightGradNoTranspose checks that the weight gradient of x·Wᵀ (the
// model's linear layers, W [out, in]) comes out of its DotGeneral as
// [out, in] with no Transpose node after it.
func TestWeightGradNoTranspose(t *testing.T) {
	Register()
	g := graph.NewGraph(backend.Must(""), "wgrad")
	x := graph.Parameter(g, "x", shapes.Make(dtypes.Float32, 2, 3, 4))
	w := graph.Parameter(g, "w", shapes.Make(dtypes.Float32, 5, 4))
	y := graph.DotGeneral(x, []int{2}, nil, w, []int{1}, nil)
	grads := graph.Gradient(graph.ReduceAllSum(graph.Mul(y, y)), x, w)
	for i, gr := range grads {
		if gr.Type() == graph.NodeTypeTranspose || len(gr.Inputs()) == 1 && gr.Inputs()[0].Type() == graph.NodeTypeTranspose {
			t.Errorf("gradient %d ends in a Transpose", i)
		}
	}
}
