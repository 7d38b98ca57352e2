package backend

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// randomDims returns rank 1–5 dimensions, size-1 axes included.
func randomDims(r *rand.Rand) []int {
	choices := []int{1, 2, 3, 4, 5, 7}
	dims := make([]int, 1+r.IntN(5))
	for i := range dims {
		dims[i] = choices[r.IntN(len(choices))]
	}
	return dims
}

// TestReduceExecutor checks ReduceSum/Max/Min over random shapes and axis
// sets against a reference that accumulates the operand in flat order.
func TestReduceExecutor(t *testing.T) {
	b := fastBackend(t)
	r := rand.New(rand.NewPCG(7, 8))
	ops := []backends.OpType{backends.OpTypeReduceSum, backends.OpTypeReduceMax, backends.OpTypeReduceMin}
	for range 300 {
		xd := randomDims(r)
		var axes []int
		for _, ax := range r.Perm(len(xd)) {
			if len(axes) == 0 || r.IntN(2) == 0 {
				axes = append(axes, ax)
			}
		}
		if size(xd) == 1 {
			continue
		}
		var od, keep []int
		for ax, d := range xd {
			if !slices.Contains(axes, ax) {
				od, keep = append(od, d), append(keep, ax)
			}
		}
		x := randomF32(r, size(xd), false)
		for _, op := range ops {
			want := make([]float32, size(od))
			for i := range want {
				want[i] = map[backends.OpType]float32{backends.OpTypeReduceSum: 0,
					backends.OpTypeReduceMax: float32(math.Inf(-1)), backends.OpTypeReduceMin: float32(math.Inf(1))}[op]
			}
			oIdx := make([]int, len(keep))
			for f, v := range x {
				idx := unflat(xd, f)
				for i, ax := range keep {
					oIdx[i] = idx[ax]
				}
				o := flatOf(od, oIdx)
				switch op {
				case backends.OpTypeReduceSum:
					want[o] += v
				case backends.OpTypeReduceMax:
					want[o] = max(want[o], v)
				default:
					want[o] = min(want[o], v)
				}
			}
			calls := fastOpsCalls.Load()
			out, err := fastOps[op](b, fakeNode(op, shapes.Make(dtypes.Float32, od...), axes),
				[]*simplego.Buffer{f32Buffer(t, b, x, xd)}, []bool{true})
			if err != nil || fastOpsCalls.Load() == calls {
				t.Fatalf("%v %v over %v: err=%v, hook ran: %v", op, xd, axes, err, fastOpsCalls.Load() != calls)
			}
			t.Run(fmt.Sprintf("%v/%v@%v", op, xd, axes), func(t *testing.T) { sameBits(t, bufferFlat(t, b, out), want) })
		}
	}
}

// TestTransposeExecutor checks random permutations against index
// arithmetic.
func TestTransposeExecutor(t *testing.T) {
	b := fastBackend(t)
	r := rand.New(rand.NewPCG(9, 10))
	for range 300 {
		xd := randomDims(r)
		perm := r.Perm(len(xd))
		od := make([]int, len(xd))
		for j, p := range perm {
			od[j] = xd[p]
		}
		x := randomF32(r, size(xd), false)
		want := make([]float32, len(x))
		xIdx := make([]int, len(xd))
		for f := range want {
			idx := unflat(od, f)
			for j, p := range perm {
				xIdx[p] = idx[j]
			}
			want[f] = x[flatOf(xd, xIdx)]
		}
		calls := fastOpsCalls.Load()
		out, err := transposeExec(b, fakeNode(backends.OpTypeTranspose, shapes.Make(dtypes.Float32, od...), perm),
			[]*simplego.Buffer{f32Buffer(t, b, x, xd)}, []bool{true})
		if err != nil || fastOpsCalls.Load() == calls {
			t.Fatalf("%v perm %v: err=%v, hook ran: %v", xd, perm, err, fastOpsCalls.Load() != calls)
		}
		t.Run(fmt.Sprintf("%v@%v", xd, perm), func(t *testing.T) { sameBits(t, bufferFlat(t, b, out), want) })
	}
}

// TestFastOpsThroughGraph runs a small graph on the real go backend (owned
// and parameter inputs, every hooked op) and checks it against plain Go
// loops, that the hook ran, and that float64 still works (stock path).
func TestFastOpsThroughGraph(t *testing.T) {
	b := fastBackend(t)
	r := rand.New(rand.NewPCG(11, 12))
	x, y := randomF32(r, 3*4*5, false), randomF32(r, 3*5, false) // x [3,4,5], y [3,1,5]
	calls := fastOpsCalls.Load()
	got, err := graph.ExecOnce(b, func(x, y *graph.Node) *graph.Node {
		p := graph.Mul(x, y)                     // broadcast, parameters not owned
		q := graph.Sub(graph.Neg(x), y)          // owned lhs of the output shape
		s := graph.ReduceMax(graph.Add(p, q), 1) // [3,5]
		m := graph.BroadcastToDims(graph.Reshape(s, 3, 1, 5), 3, 4, 5)
		return graph.ReduceSum(graph.TransposeAllDims(graph.Div(m, graph.Abs(y)), 2, 0, 1), 2) // [5,3]
	}, tensors.FromFlatDataAndDimensions(x, 3, 4, 5), tensors.FromFlatDataAndDimensions(y, 3, 1, 5))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 5*3)
	for i := range 3 {
		for k := range 5 {
			s := float32(math.Inf(-1))
			yy := y[i*5+k]
			for j := range 4 {
				xx := x[i*20+j*5+k]
				s = max(s, xx*yy+(-xx-yy))
			}
			d := s / float32(math.Abs(float64(yy)))
			var acc float32
			for range 4 {
				acc += d
			}
			want[k*3+i] = acc
		}
	}
	if dims := got.Shape().Dimensions; !slices.Equal(dims, []int{5, 3}) {
		t.Fatalf("shape %v, want [5 3]", dims)
	}
	sameBits(t, tensors.MustCopyFlatData[float32](got), want)
	if fastOpsCalls.Load()-calls < 5 {
		t.Errorf("hook ran %d ops, want at least 5", fastOpsCalls.Load()-calls)
	}
	// One-hot through Equal(int32 iota, labels), then a float32 Where.
	oneHot := graph.MustExecOnce(b, func(labels *graph.Node) *graph.Node {
		iota := graph.Iota(labels.Graph(), shapes.Make(dtypes.Int32, 1, 4), 1)
		return graph.ConvertDType(graph.Equal(graph.InsertAxes(labels, -1), iota), dtypes.Float32)
	}, []int32{2, 0, 3}).Value().([][]float32)
	if fmt.Sprint(oneHot) != "[[0 0 1 0] [1 0 0 0] [0 0 0 1]]" {
		t.Fatalf("one-hot = %v", oneHot)
	}
	got64 := graph.MustExecOnce(b, func(x, y *graph.Node) *graph.Node {
		return graph.Mul(x, y)
	}, [][]float64{{1}, {2}}, [][]float64{{3, 4}}).Value().([][]float64)
	if !slices.Equal(got64[0], []float64{3, 4}) || !slices.Equal(got64[1], []float64{6, 8}) {
		t.Fatalf("float64 broadcast Mul = %v", got64)
	}
}
