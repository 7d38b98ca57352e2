package vjp

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/grpokit/grpokit/internal/backend"
)

// checkpointLoss is L = Σ c ⊙ tanh(tanh((P·W)·W)·U) in float64: two
// layers that share W, and W also upstream of the first layer's input (as
// a tied LM head's weight is upstream of the hidden states).
func checkpointLoss(p, w, u, c []float64) float64 {
	mat := func(a, b []float64, n, k, m int) []float64 {
		out := make([]float64, n*m)
		for i := range n {
			for j := range m {
				for l := range k {
					out[i*m+j] += a[i*k+l] * b[l*m+j]
				}
			}
		}
		return out
	}
	tanh := func(a []float64) []float64 {
		for i := range a {
			a[i] = math.Tanh(a[i])
		}
		return a
	}
	x := mat(p, w, 2, 3, 3)
	h := tanh(mat(x, w, 2, 3, 3))
	y := tanh(mat(h, u, 2, 3, 3))
	var l float64
	for i := range y {
		l += c[i] * y[i]
	}
	return l
}

// TestCheckpoint differentiates two checkpointed layers and compares with
// central differences of the same function in float64; f is built once
// forward and once more in the backward pass per layer.
func TestCheckpoint(t *testing.T) {
	p := []float64{0.3, -0.2, 0.5, 0.1, 0.4, -0.6}
	w := []float64{0.2, -0.5, 0.3, 0.7, 0.1, -0.4, -0.3, 0.6, 0.2}
	u := []float64{-0.1, 0.4, 0.8, 0.5, -0.7, 0.2, 0.3, 0.1, -0.6}
	c := []float64{1, -2, 0.5, 0.7, 1.5, -1}
	f32 := func(a []float64, dims ...int) *tensors.Tensor {
		out := make([]float32, len(a))
		for i, v := range a {
			out[i] = float32(v)
		}
		return tensors.FromFlatDataAndDimensions(out, dims...)
	}
	builds := 0
	for _, checkpoint := range []bool{false, true} {
		builds = 0
		outs := graph.MustExecOnceN(backend.Must(""), func(pn, wn, un, cn *graph.Node) []*graph.Node {
			mm := func(a, b *graph.Node) *graph.Node { return graph.DotGeneral(a, []int{1}, nil, b, []int{0}, nil) }
			layer := func(m *graph.Node) func(x *graph.Node) *graph.Node {
				return func(x *graph.Node) *graph.Node { builds++; return graph.Tanh(mm(x, m)) }
			}
			x := mm(pn, wn)
			var h, y *graph.Node
			if checkpoint {
				h = Checkpoint(layer(wn), x)
				y = Checkpoint(layer(un), h)
			} else {
				h = layer(wn)(x)
				y = layer(un)(h)
			}
			loss := graph.ReduceAllSum(graph.Mul(y, cn))
			return append([]*graph.Node{loss}, graph.Gradient(loss, pn, wn, un)...)
		}, f32(p, 2, 3), f32(w, 3, 3), f32(u, 3, 3), f32(c, 2, 3))
		if want := checkpointLoss(p, w, u, c); math.Abs(float64(tensors.ToScalar[float32](outs[0]))-want) > 1e-5 {
			t.Errorf("checkpoint %v: loss %g, want %g", checkpoint, tensors.ToScalar[float32](outs[0]), want)
		}
		if checkpoint && builds != 4 {
			t.Errorf("%d builds of the layers, want 4 (two forward, two in the backward pass)", builds)
		}
		for k, param := range [][]float64{p, w, u} {
			got := tensors.MustCopyFlatData[float32](outs[1+k])
			for i := range param {
				const eps = 1e-6
				saved := param[i]
				param[i] = saved + eps
				hi := checkpointLoss(p, w, u, c)
				param[i] = saved - eps
				lo := checkpointLoss(p, w, u, c)
				param[i] = saved
				want := (hi - lo) / (2 * eps)
				if math.Abs(float64(got[i])-want) > 1e-5+1e-4*math.Abs(want) {
					t.Errorf("checkpoint %v: gradient of parameter %d [%d] = %g, want %g", checkpoint, k, i, got[i], want)
				}
			}
		}
	}
}

// TestCheckpointOutputIsExact checks that the tie adds an exact zero even
// when the input element it reads is +Inf.
func TestCheckpointOutputIsExact(t *testing.T) {
	x := tensors.FromFlatDataAndDimensions([]float32{float32(math.Inf(1)), 1e30, -3}, 3)
	out := graph.MustExecOnce(backend.Must(""), func(xn *graph.Node) *graph.Node {
		return Checkpoint(func(x *graph.Node) *graph.Node {
			return graph.Where(graph.IsFinite(x), graph.MulScalar(x, 2), graph.Zeros(x.Graph(), shapes.Make(dtypes.Float32, 3)))
		}, xn)
	}, x)
	got := tensors.MustCopyFlatData[float32](out)
	if want := []float32{0, 2e30, -6}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("Checkpoint output %v, want %v", got, want)
	}
}
