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

// flatLengths cover the SIMD blocks' tails (32 and 64 floats per loop
// iteration, 8 and 16 per exp register).
var flatLengths = []int{2, 7, 15, 17, 33, 65, 1000 + 3}

// runHooked calls the hooked executor of op and fails unless the hook ran
// (not its stock fallback).
func runHooked(t *testing.T, b *simplego.Backend, op backends.OpType, out shapes.Shape, inputs []*simplego.Buffer, owned []bool) *simplego.Buffer {
	t.Helper()
	calls := fastOpsCalls.Load()
	res, err := fastOps[op](b, fakeNode(op, out, nil), inputs, owned)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	if fastOpsCalls.Load() == calls {
		t.Fatalf("%s %s: hook stepped aside", op, out)
	}
	return res
}

// TestFlatBinaryExecutor checks same-shape, scalar-rhs and scalar-lhs Add,
// Sub, Mul and Div bit for bit against plain loops, with every
// combination of owned inputs and the reuse protocol.
func TestFlatBinaryExecutor(t *testing.T) {
	b := fastBackend(t)
	r := rand.New(rand.NewPCG(7, 8))
	type form struct{ ld, rd []int }
	var forms []form
	for _, n := range flatLengths {
		forms = append(forms, form{[]int{n}, []int{n}}, form{[]int{n}, nil}, form{nil, []int{n}}, form{[]int{n}, []int{1}}, form{[]int{1}, []int{n}})
	}
	forms = append(forms, form{[]int{3, 5, 7}, []int{3, 5, 7}}, form{[]int{3, 5, 7}, []int{1, 1, 1}}, form{[]int{1, 1, 1}, []int{3, 5, 7}})
	for _, f := range forms {
		od := f.ld
		if size(f.rd) > size(f.ld) {
			od = f.rd
		}
		for op := opAdd; op <= opDiv; op++ {
			l, rr := randomF32(r, size(f.ld), false), randomF32(r, size(f.rd), false)
			want := make([]float32, size(od))
			for i := range want {
				want[i] = refOps[op](l[min(i, len(l)-1)], rr[min(i, len(rr)-1)])
			}
			for owned := range 4 {
				name := fmt.Sprintf("%v/%v%v/owned%02b", binOpTypes[op], f.ld, f.rd, owned)
				lb, rb := f32Buffer(t, b, l, f.ld), f32Buffer(t, b, rr, f.rd)
				inputs := []*simplego.Buffer{lb, rb}
				own := []bool{owned&1 != 0, owned&2 != 0}
				out := runHooked(t, b, binOpTypes[op], shapes.Make(dtypes.Float32, od...), inputs, own)
				t.Run(name, func(t *testing.T) { sameBits(t, bufferFlat(t, b, out), want) })
				checkReuse(t, b, name, own, f.ld, f.rd, od, inputs, lb, rb, out, l, rr)
			}
		}
	}
}

// TestFlatMaxUsesStock: same-shape Max stays with SimpleGo (and is right).
func TestFlatMaxUsesStock(t *testing.T) {
	b := fastBackend(t)
	calls := fastOpsCalls.Load()
	out, err := fastOps[backends.OpTypeMax](b, fakeNode(backends.OpTypeMax, shapes.Make(dtypes.Float32, 3), nil),
		[]*simplego.Buffer{f32Buffer(t, b, []float32{1, 5, -2}, []int{3}), f32Buffer(t, b, []float32{4, 2, -3}, []int{3})}, []bool{false, false})
	if err != nil {
		t.Fatal(err)
	}
	if fastOpsCalls.Load() != calls {
		t.Error("hook ran a same-shape Max")
	}
	sameBits(t, bufferFlat(t, b, out), []float32{4, 5, -2})
}

// ulpDiff is the distance in float32 steps between two results of the
// same sign (NaN only matches NaN).
func ulpDiff(a, b float32) int64 {
	if a != a || b != b {
		if a != a && b != b {
			return 0
		}
		return math.MaxInt64
	}
	d := int64(math.Float32bits(a)&^(1<<31)) - int64(math.Float32bits(b)&^(1<<31))
	if math.Signbit(float64(a)) != math.Signbit(float64(b)) && (a != 0 || b != 0) {
		return math.MaxInt64
	}
	return max(d, -d)
}

func refExp32(x float32) float32 { return float32(math.Exp(float64(x))) }

func refLogistic32(x float32) float32 {
	if x >= 0 {
		return float32(1 / (1 + math.Exp(-float64(x))))
	}
	e := math.Exp(float64(x))
	return float32(e / (1 + e))
}

// TestUnaryExecutor checks Exp and Logistic against float64 math.Exp
// (2 and 3 ulp), Sqrt and Neg exactly, owned and not, including
// overflow, underflow, negative square roots and NaN.
func TestUnaryExecutor(t *testing.T) {
	b := fastBackend(t)
	r := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct {
		op     backends.OpType
		ref    func(float32) float32
		maxULP int64
	}{{backends.OpTypeExp, refExp32, 2}, {backends.OpTypeLogistic, refLogistic32, 3},
		{backends.OpTypeSqrt, func(x float32) float32 { return float32(math.Sqrt(float64(x))) }, 0},
		{backends.OpTypeNeg, func(x float32) float32 { return -x }, 0}} {
		for _, n := range flatLengths {
			x := randomF32(r, n, false)
			for i := range x {
				x[i] *= 30 // reaches both saturation ends
			}
			x[0] = float32(math.NaN())
			if n > 3 {
				x[1], x[2], x[3] = 100, -120, float32(math.Inf(-1))
			}
			for _, owned := range []bool{false, true} {
				xb := f32Buffer(t, b, x, []int{n})
				inputs := []*simplego.Buffer{xb}
				out := runHooked(t, b, tc.op, shapes.Make(dtypes.Float32, n), inputs, []bool{owned})
				if owned != (out == xb) || owned != (inputs[0] == nil) {
					t.Fatalf("%s n=%d owned=%v: reuse protocol broken", tc.op, n, owned)
				}
				if !owned {
					sameBits(t, bufferFlat(t, b, xb), x)
				}
				for i, g := range bufferFlat(t, b, out) {
					if d := ulpDiff(g, tc.ref(x[i])); d > tc.maxULP {
						t.Fatalf("%s(%g) = %g, want %g (%d ulp)", tc.op, x[i], g, tc.ref(x[i]), d)
					}
				}
			}
		}
	}
}

// TestFlatOpsThroughGraph runs Exp, Sigmoid, Where and flat binary ops through a
// graph on the real go backend and checks the result against plain Go and
// that the hook ran.
func TestFlatOpsThroughGraph(t *testing.T) {
	b := fastBackend(t)
	r := rand.New(rand.NewPCG(13, 14))
	const n = 2*17 + 1
	x, y := randomF32(r, n, false), randomF32(r, n, true)
	calls := fastOpsCalls.Load()
	got, err := graph.ExecOnce(b, func(x, y *graph.Node) *graph.Node {
		e := graph.Exp(x)                         // parameter: not owned
		s := graph.Sigmoid(graph.MulScalar(x, 4)) // owned
		p := graph.Mul(e, y)                      // same shape
		q := graph.Div(graph.Sub(p, s), y)        // same shape
		v := graph.Add(graph.DivScalar(q, 3), graph.Const(x.Graph(), float32(0.5)))
		return graph.Where(graph.GreaterThan(x, graph.ZerosLike(x)), v, graph.Neg(v))
	}, tensors.FromFlatDataAndDimensions(x, 5, 7), tensors.FromFlatDataAndDimensions(y, 5, 7))
	if err != nil {
		t.Fatal(err)
	}
	flat := tensors.MustCopyFlatData[float32](got)
	for i := range n {
		e, s := float64(refExp32(x[i])), float64(refLogistic32(x[i]*4))
		want := ((e*float64(y[i])-s)/float64(y[i]))/3 + 0.5
		if !(x[i] > 0) {
			want = -want
		}
		if math.Abs(float64(flat[i])-want) > 1e-5*(1+math.Abs(want)) {
			t.Fatalf("element %d = %g, want %g", i, flat[i], want)
		}
	}
	if ran := fastOpsCalls.Load() - calls; ran < 7 {
		t.Errorf("hook ran %d ops, want at least 7", ran)
	}
}

// TestWhereExecutor checks Where with vector and scalar branches, every
// combination of owned branches, against a plain loop, and the reuse
// protocol; a scalar condition stays with SimpleGo.
func TestWhereExecutor(t *testing.T) {
	b := fastBackend(t)
	r := rand.New(rand.NewPCG(15, 16))
	for _, n := range flatLengths {
		cond := make([]bool, n)
		for i := range cond {
			cond[i] = r.IntN(2) == 0
		}
		for form := range 4 {
			tDims, fDims := []int{n}, []int{n}
			if form&2 != 0 {
				tDims = nil
			}
			if form&1 != 0 {
				fDims = nil
			}
			tv, fv := randomF32(r, size(tDims), false), randomF32(r, size(fDims), false)
			want := make([]float32, n)
			for i := range want {
				if cond[i] {
					want[i] = tv[min(i, len(tv)-1)]
				} else {
					want[i] = fv[min(i, len(fv)-1)]
				}
			}
			for owned := range 4 {
				name := fmt.Sprintf("n%d/form%02b/owned%02b", n, form, owned)
				cb, err := b.BufferFromFlatData(0, slices.Clone(cond), shapes.Make(dtypes.Bool, n))
				if err != nil {
					t.Fatal(err)
				}
				tb, fb := f32Buffer(t, b, tv, tDims), f32Buffer(t, b, fv, fDims)
				inputs := []*simplego.Buffer{cb.(*simplego.Buffer), tb, fb}
				own := []bool{false, owned&1 != 0, owned&2 != 0}
				out := runHooked(t, b, backends.OpTypeWhere, shapes.Make(dtypes.Float32, n), inputs, own)
				sameBits(t, bufferFlat(t, b, out), want)
				reuseT := own[1] && len(tDims) == 1
				reuseF := !reuseT && own[2] && len(fDims) == 1
				switch {
				case reuseT && (out != tb || inputs[1] != nil || inputs[2] != fb):
					t.Fatalf("%s: owned onTrue not reused per protocol", name)
				case reuseF && (out != fb || inputs[2] != nil || inputs[1] != tb):
					t.Fatalf("%s: owned onFalse not reused per protocol", name)
				case !reuseT && !reuseF && (out == tb || out == fb || inputs[1] != tb || inputs[2] != fb):
					t.Fatalf("%s: wrote into an input it may not reuse", name)
				}
			}
		}
	}
	calls := fastOpsCalls.Load()
	cb, _ := b.BufferFromFlatData(0, []bool{true}, shapes.Make(dtypes.Bool))
	out, err := fastOps[backends.OpTypeWhere](b, fakeNode(backends.OpTypeWhere, shapes.Make(dtypes.Float32, 3), nil),
		[]*simplego.Buffer{cb.(*simplego.Buffer), f32Buffer(t, b, []float32{1, 2, 3}, []int{3}), f32Buffer(t, b, []float32{4, 5, 6}, []int{3})},
		[]bool{false, false, false})
	if err != nil || fastOpsCalls.Load() != calls {
		t.Fatalf("scalar condition: err=%v, hook ran: %v", err, fastOpsCalls.Load() != calls)
	}
	sameBits(t, bufferFlat(t, b, out), []float32{1, 2, 3})
}
