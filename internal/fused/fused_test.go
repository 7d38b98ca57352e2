package fused

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/grpokit/grpokit/internal/backend"
)

func randSlice(r *rand.Rand, n int, scale float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.NormFloat64() * scale)
	}
	return out
}

// run evaluates build on the "go" backend with float32 inputs (shapes
// dims) and, when mask is set, a bool mask of the first input's shape as
// the last input; it returns the outputs' flat values.
func run(t *testing.T, build func(in []*Node) []*Node, data [][]float32, dims [][]int, mask []bool) [][]float32 {
	t.Helper()
	b := backend.Must("")
	exec := MustNewExec(b, func(in []*Node) []*Node { return build(in) })
	var args []any
	for i, d := range data {
		args = append(args, tensors.FromFlatDataAndDimensions(d, dims[i]...))
	}
	if mask != nil {
		args = append(args, tensors.FromFlatDataAndDimensions(mask, dims[0]...))
	}
	outs, err := exec.Exec(args...)
	if err != nil {
		t.Fatal(err)
	}
	res := make([][]float32, len(outs))
	for i, o := range outs {
		res[i] = tensors.MustCopyFlatData[float32](o)
	}
	return res
}

// check compares got with the float64 reference want: |diff| ≤
// tol·(|want|+scale), scale being the size of the terms a value is the
// sum or difference of (where they cancel, float32 rounding of the terms
// shows).
func check(t *testing.T, name string, got []float32, want []float64, tol, scale float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	for i, w := range want {
		if d := math.Abs(float64(got[i]) - w); d > tol*(math.Abs(w)+scale) || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s[%d] = %.9g, float64 reference %.9g", name, i, got[i], w)
		}
	}
}

func bitEqual(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d]: fused %.9g, plain chain %.9g: not bit-identical", name, i, got[i], want[i])
		}
	}
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// lossGrads returns f's output and the gradients of Σ f·r with respect
// to the inputs listed in wrt.
func lossGrads(f func(in []*Node) *Node, nIn int, wrt ...int) func(in []*Node) []*Node {
	return func(in []*Node) []*Node {
		y := f(in)
		loss := ReduceAllSum(Mul(y, in[nIn]))
		var ps []*Node
		for _, i := range wrt {
			ps = append(ps, in[i])
		}
		return append([]*Node{y}, Gradient(loss, ps...)...)
	}
}

func TestAvailable(t *testing.T) {
	if !Available(backend.Must("")) {
		t.Fatalf("fused ops unavailable on the go backend (hooks: %v, %v)", backend.FastElementwise(), backend.FastDotGeneral())
	}
}

func TestSwiGLU(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 3 * (4096 + 37) // split across goroutines, with a tail
	dims := [][]int{{3, n / 3}, {3, n / 3}, {3, n / 3}}
	g, u, w := randSlice(r, n, 3), randSlice(r, n, 1), randSlice(r, n, 1)
	before := backend.FusedRuns(backend.FusedSwiGLU)
	got := run(t, lossGrads(func(in []*Node) *Node { return SwiGLU(in[0], in[1]) }, 2, 0, 1), [][]float32{g, u, w}, dims, nil)
	plain := run(t, func(in []*Node) []*Node { return []*Node{Mul(Mul(in[0], Sigmoid(in[0])), in[1])} }, [][]float32{g, u}, dims, nil)
	if backend.FusedRuns(backend.FusedSwiGLU)-before < 2 || backend.FusedRuns(backend.FusedSiLUGrad) == 0 {
		t.Fatal("the fused nodes did not run")
	}
	bitEqual(t, "silu(g)·u", got[0], plain[0])
	y, dg, du := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		x, s := float64(g[i]), sigmoid(float64(g[i]))
		y[i] = x * s * float64(u[i])
		dg[i] = float64(w[i]) * float64(u[i]) * s * (1 + x*(1-s))
		du[i] = float64(w[i]) * x * s
	}
	check(t, "silu(g)·u", got[0], y, 1e-6, 1e-6)
	check(t, "d/dg", got[1], dg, 1e-5, 1e-2) // 1 + g·(1−σ) cancels near g ≈ −1.28
	check(t, "d/du", got[2], du, 1e-5, 1e-3)
}

func TestAttentionSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const rows, S = 700, 45 // 700 rows: split across goroutines
	n := rows * S
	dims := [][]int{{7, 100, S}, {7, 100, S}}
	x, w := randSlice(r, n, 4), randSlice(r, n, 1)
	mask := make([]bool, n)
	for i := range mask {
		row, j := i/S, i%S
		mask[i] = j <= row%S && row%13 != 0 // causal, and some rows fully masked
	}
	const scale, fill = 0.125, -1e30
	build := func(in []*Node) *Node { return AttentionSoftmax(in[0], in[2], scale, fill) }
	got := run(t, func(in []*Node) []*Node {
		return lossGrads(func(in []*Node) *Node { return build([]*Node{in[0], nil, in[2]}) }, 1, 0)([]*Node{in[0], in[1], in[2]})
	}, [][]float32{x, w}, dims, mask)
	plain := run(t, func(in []*Node) []*Node {
		s := Where(in[1], MulScalar(in[0], scale), Scalar(in[0].Graph(), dtypes.Float32, fill))
		return []*Node{Softmax(s, -1)}
	}, [][]float32{x}, dims[:1], mask)
	bitEqual(t, "softmax", got[0], plain[0])
	p, dx := make([]float64, n), make([]float64, n)
	for row := range rows {
		s := make([]float64, S)
		m := math.Inf(-1)
		for j := range S {
			s[j] = fill
			if mask[row*S+j] {
				s[j] = float64(float32(float64(x[row*S+j]) * scale))
			}
			m = max(m, s[j])
		}
		var sum, d float64
		for j := range S {
			s[j] = math.Exp(s[j] - m)
			sum += s[j]
		}
		for j := range S {
			p[row*S+j] = s[j] / sum
			d += p[row*S+j] * float64(w[row*S+j])
		}
		for j := range S {
			if mask[row*S+j] {
				dx[row*S+j] = scale * p[row*S+j] * (float64(w[row*S+j]) - d)
			}
		}
	}
	check(t, "softmax", got[0], p, 1e-5, 1e-7)
	check(t, "d/dx", got[1], dx, 1e-4, 1e-6)
}

func TestRMSNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, H, eps = 300, 96, 1e-5
	n := rows * H
	x, wt, v := randSlice(r, n, 2), randSlice(r, H, 1), randSlice(r, n, 1)
	dims := [][]int{{3, 100, H}, {1, 1, H}, {3, 100, H}}
	got := run(t, lossGrads(func(in []*Node) *Node { return RMSNorm(in[0], in[1], eps) }, 2, 0, 1), [][]float32{x, wt, v}, dims, nil)
	plain := run(t, func(in []*Node) []*Node {
		ms := ReduceAndKeep(Square(in[0]), ReduceMean, -1)
		return []*Node{Mul(Div(in[0], Sqrt(AddScalar(ms, eps))), in[1])}
	}, [][]float32{x, wt}, dims[:2], nil)
	bitEqual(t, "rmsnorm", got[0], plain[0])
	y, dx, dw := make([]float64, n), make([]float64, n), make([]float64, H)
	for row := range rows {
		xr := x[row*H : (row+1)*H]
		var ms float64
		for _, a := range xr {
			ms += float64(a) * float64(a)
		}
		rms := math.Sqrt(ms/H + eps)
		var d float64
		for j, a := range xr {
			xh := float64(a) / rms
			y[row*H+j] = xh * float64(wt[j])
			d += float64(v[row*H+j]) * float64(wt[j]) * xh
			dw[j] += float64(v[row*H+j]) * xh
		}
		for j, a := range xr {
			xh := float64(a) / rms
			dx[row*H+j] = (float64(v[row*H+j])*float64(wt[j]) - xh*d/H) / rms
		}
	}
	check(t, "rmsnorm", got[0], y, 1e-5, 1e-6)
	check(t, "d/dx", got[1], dx, 1e-5, 1e-1) // a difference of terms of size ~1
	check(t, "d/dw", got[2], dw, 1e-4, 1e-3)
}

// TestRoPE runs 3 heads and 1 (a lone KV head, as Gemma 3 1B's keys: x
// has the table's shape, and the table, made in the graph, is free to be
// reused as the output buffer at its last use).
func TestRoPE(t *testing.T) {
	for _, nh := range []int{3, 1} {
		t.Run(fmt.Sprint(nh, "heads"), func(t *testing.T) { testRoPE(t, nh) })
	}
}

func testRoPE(t *testing.T, nh int) {
	r := rand.New(rand.NewPCG(7, uint64(nh)))
	const B, T, hd = 2, 300, 16
	n := B * T * nh * hd
	x, v := randSlice(r, n, 1), randSlice(r, n, 1)
	angle := make([]float32, B*T*hd/2)
	for i := range angle {
		angle[i] = float32(r.Float64() * 100)
	}
	dims := [][]int{{B, T, nh, hd}, {B, T, 1, hd / 2}, {B, T, nh, hd}}
	table := func(a *Node) *Node { return Concatenate([]*Node{Cos(a), Sin(a)}, -1) }
	got := run(t, lossGrads(func(in []*Node) *Node { return RoPE(in[0], table(in[1])) }, 2, 0), [][]float32{x, angle, v}, dims, nil)
	plain := run(t, func(in []*Node) []*Node {
		full := Concatenate([]*Node{in[1], in[1]}, -1)
		lo, hi := SliceAxis(in[0], 3, AxisRange(0, hd/2)), SliceAxis(in[0], 3, AxisRange(hd/2, hd))
		rot := Concatenate([]*Node{Neg(hi), lo}, 3)
		return []*Node{Add(Mul(in[0], Cos(full)), Mul(rot, Sin(full)))}
	}, [][]float32{x, angle}, dims[:2], nil)
	bitEqual(t, "rope", got[0], plain[0])
	y, dx := make([]float64, n), make([]float64, n)
	for row := range B * T * nh {
		tr := row / nh
		for j := range hd / 2 {
			c, s := math.Cos(float64(angle[tr*hd/2+j])), math.Sin(float64(angle[tr*hd/2+j]))
			a, b := float64(x[row*hd+j]), float64(x[row*hd+j+hd/2])
			y[row*hd+j], y[row*hd+j+hd/2] = a*c-b*s, b*c+a*s
			va, vb := float64(v[row*hd+j]), float64(v[row*hd+j+hd/2])
			dx[row*hd+j], dx[row*hd+j+hd/2] = va*c+vb*s, vb*c-va*s
		}
	}
	check(t, "rope", got[0], y, 1e-6, 1) // sums of two terms of size ~1
	check(t, "d/dx", got[1], dx, 1e-6, 1)
}

// TestRMSNormOneRow: one row, so the weight (made in the graph, as
// Gemma's 1 + w) has the output's shape and is free at its last use.
func TestRMSNormOneRow(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const H, eps = 96, 1e-6
	x, wt := randSlice(r, H, 2), randSlice(r, H, 1)
	got := run(t, func(in []*Node) []*Node {
		return []*Node{RMSNorm(in[0], OnePlus(in[1]), eps)}
	}, [][]float32{x, wt}, [][]int{{1, 1, H}, {1, 1, H}}, nil)
	var ms float64
	for _, a := range x {
		ms += float64(a) * float64(a)
	}
	rms := math.Sqrt(ms/H + eps)
	want := make([]float64, H)
	for j, a := range x {
		want[j] = float64(a) / rms * (1 + float64(wt[j]))
	}
	check(t, "rmsnorm", got[0], want, 1e-5, 1e-6)
}

func TestNoSecondOrder(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a second derivative of a fused node did not panic")
		}
	}()
	g := NewGraph(backend.Must(""), "t")
	x := Parameter(g, "x", shapes.Make(dtypes.Float32, 4))
	y := SwiGLU(x, x)
	dx := Gradient(ReduceAllSum(y), x)[0]
	Gradient(ReduceAllSum(dx), x)
}
