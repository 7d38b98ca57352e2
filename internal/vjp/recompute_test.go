package vjp

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/grpokit/grpokit/internal/backend"
)

// A weight made by Recompute is built again for the gradient of the input
// (a second build), and the gradient is the same as with the plain node:
// d sum(x·Wᵀ)/dx = column sums of W.
func TestRecompute(t *testing.T) {
	Register()
	builds := 0
	widen := func(in ...*graph.Node) *graph.Node {
		builds++
		return graph.ConvertDType(in[0], dtypes.Float32)
	}
	x := tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	w := tensors.FromFlatDataAndDimensions([]float64{1, -2, 0.5, 3, 0, -1}, 2, 3) // [out 2, in 3]
	out := graph.MustExecOnceN(backend.Must(""), func(xn, wn *graph.Node) []*graph.Node {
		wf := Recompute(widen, wn)
		y := graph.DotGeneral(xn, []int{1}, nil, wf, []int{1}, nil)
		return graph.Gradient(graph.ReduceAllSum(y), xn)
	}, x, w)
	if builds != 2 {
		t.Errorf("%d builds, want 2 (forward and the input's gradient)", builds)
	}
	got := tensors.MustCopyFlatData[float32](out[0])
	want := []float32{4, -2, -0.5, 4, -2, -0.5}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("gradient %v, want %v", got, want)
		}
	}
}
