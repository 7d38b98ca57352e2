package backend

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// nearestBF16 is an independent reference for RoundBF16: the bfloat16
// bit patterns just below and just above |x| in magnitude, compared by
// their distance to x in float64 (exact for these values); a tie goes to
// the pattern whose last bit is 0. Beyond the largest finite bfloat16 the
// next pattern is +Inf, weighed as 2^128 (IEEE rounding with an unbounded
// exponent). NaN returns ok false.
func nearestBF16(x float32) (bits uint16, ok bool) {
	if x != x {
		return 0, false
	}
	if math.IsInf(float64(x), 0) {
		return uint16(math.Float32bits(x) >> 16), true
	}
	sign := uint16(0)
	if math.Signbit(float64(x)) {
		sign = 0x8000
	}
	ax := math.Abs(float64(x))
	value := func(p uint16) float64 {
		if p == 0x7f80 {
			return math.Ldexp(1, 128)
		}
		return float64(math.Float32frombits(uint32(p) << 16))
	}
	// The largest pattern whose value is ≤ |x| (patterns of positive
	// values are ordered as integers), found by bisection.
	lo, hi := uint16(0), uint16(0x7f80)
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if value(mid) <= ax {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if value(lo) == ax {
		return sign | lo, true
	}
	up := lo + 1
	dLo, dUp := ax-value(lo), value(up)-ax
	switch {
	case dLo < dUp:
		return sign | lo, true
	case dUp < dLo:
		return sign | up, true
	case lo&1 == 0:
		return sign | lo, true
	}
	return sign | up, true
}

func TestRoundBF16(t *testing.T) {
	for _, c := range []struct {
		in   uint32 // float32 bits
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1 exactly
		{0x3f808000, 0x3f80}, // tie, even below: stays
		{0x3f818000, 0x3f82}, // tie, odd below: up to even
		{0x3f808001, 0x3f81}, // just above the tie: up
		{0x3f807fff, 0x3f80}, // just below the tie: down
		{0xbf808001, 0xbf81}, // negative: away from zero past the tie
		{0xbf818000, 0xbf82}, // negative tie, odd below: to even
		{0x7f7fffff, 0x7f80}, // max float32 rounds to +Inf, as torch
		{0x7f7f7fff, 0x7f7f}, // just below the tie with +Inf: max bf16
		{0x7f7f8000, 0x7f80}, // the tie with +Inf: odd below, so +Inf
		{0x7f800000, 0x7f80}, // +Inf
		{0xff800000, 0xff80}, // -Inf
		{0x00000000, 0x0000}, // +0
		{0x80000000, 0x8000}, // -0
		{0x00008000, 0x0000}, // subnormal tie, even below
		{0x00018000, 0x0002}, // subnormal tie, odd below
		{0x807fffff, 0x8080}, // largest negative subnormal rounds to -min normal
	} {
		if got := RoundBF16(math.Float32frombits(c.in)).Bits(); got != c.want {
			t.Errorf("RoundBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
		if ref, _ := nearestBF16(math.Float32frombits(c.in)); ref != c.want {
			t.Errorf("reference(%#08x) = %#04x, want %#04x (the reference is wrong)", c.in, ref, c.want)
		}
	}
	for _, nan := range []uint32{0x7fc00000, 0x7f800001, 0xffffffff, 0x7f80ffff} {
		v := RoundBF16(math.Float32frombits(nan))
		if f := v.Float32(); f == f {
			t.Errorf("RoundBF16(NaN %#08x) = %#04x, not a NaN", nan, v.Bits())
		}
	}
	// Every bfloat16 pattern with the low halves that matter: exact, just
	// above, below and at the tie, and the extremes.
	for hi := range uint32(1 << 16) {
		for _, low := range []uint32{0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff, 0x1234, 0xc000} {
			x := math.Float32frombits(hi<<16 | low)
			want, ok := nearestBF16(x)
			got := RoundBF16(x)
			if !ok {
				if f := got.Float32(); f == f {
					t.Fatalf("RoundBF16(%#08x) = %#04x, not a NaN", hi<<16|low, got.Bits())
				}
				continue
			}
			if got.Bits() != want {
				t.Fatalf("RoundBF16(%#08x) = %#04x, nearest even is %#04x", hi<<16|low, got.Bits(), want)
			}
		}
	}
}

// TestBF16RoundsToNearest checks the hooked ConvertDType and bf16
// DotGeneral of the "go" backend against RoundBF16 of float64 references.
func TestBF16RoundsToNearest(t *testing.T) {
	t.Setenv(EnvVar, "")
	b := Must("go")
	if err := FastDotGeneral(); err != nil {
		t.Skipf("gemm hook off: %v", err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 6*40)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	got := graph.MustExecOnce(b, func(x *graph.Node) *graph.Node {
		return graph.ConvertDType(x, dtypes.BFloat16)
	}, tensors.FromFlatDataAndDimensions(x, 6, 40))
	for i, v := range tensors.MustCopyFlatData[bfloat16.BFloat16](got) {
		if v != RoundBF16(x[i]) {
			t.Fatalf("ConvertDType(%v) = %v, want %v (nearest even)", x[i], v, RoundBF16(x[i]))
		}
	}

	// [6, 40] × [40, 5] in bf16: products of bf16 values are exact in f32,
	// so the float64 sum of the bf16 inputs, rounded, is the answer up to
	// f32 accumulation (allow one bf16 ulp).
	w := make([]bfloat16.BFloat16, 40*5)
	xb := make([]bfloat16.BFloat16, len(x))
	for i := range w {
		w[i] = RoundBF16(float32(r.NormFloat64()))
	}
	for i := range x {
		xb[i] = RoundBF16(x[i])
	}
	calls := fastCalls.Load()
	out := graph.MustExecOnce(b, func(x, w *graph.Node) *graph.Node { return graph.Dot(x, w) },
		tensors.FromFlatDataAndDimensions(xb, 6, 40), tensors.FromFlatDataAndDimensions(w, 40, 5))
	if fastCalls.Load() == calls {
		t.Error("the bf16 DotGeneral did not go through gemm")
	}
	flat := tensors.MustCopyFlatData[bfloat16.BFloat16](out)
	exact := 0
	for i := range 6 {
		for j := range 5 {
			var s float64
			for k := range 40 {
				s += float64(xb[i*40+k].Float32()) * float64(w[k*5+j].Float32())
			}
			want := RoundBF16(float32(s))
			d := int(flat[i*5+j].Bits()) - int(want.Bits())
			if d < -1 || d > 1 {
				t.Errorf("out[%d,%d] = %v, want %v", i, j, flat[i*5+j], want)
			}
			if d == 0 {
				exact++
			}
		}
	}
	if exact < 27 {
		t.Errorf("only %d of 30 outputs rounded to nearest (truncation?)", exact)
	}
}

// TestBF16OpsRoundToNearest runs bfloat16 ops on the "go" backend and
// checks each result against nearestBF16 of the float64 result of the same
// op on the same (widened) inputs, rounded to float32 first as a float32
// kernel (and torch's) would. Add, Sub, Mul, Div, Sqrt, conversions and
// Iota must match exactly; ops whose float32 value is an approximation
// (transcendentals, sums) within one bf16 ulp, and exactly for at least
// 98% of the elements (truncation gets about half of them wrong).
func TestBF16OpsRoundToNearest(t *testing.T) {
	t.Setenv(EnvVar, "")
	b := Must("go")
	if err := RoundBF16Ops(); err != nil {
		t.Fatalf("bf16 rounding not in place: %v", err)
	}
	calls := roundCalls.Load()
	defer func() {
		if roundCalls.Load() == calls {
			t.Error("no bf16 op went through the rounding wrapper")
		}
	}()
	r := rand.New(rand.NewPCG(7, 8))
	const rows, cols = 24, 50
	gen := func(lo, hi float64) []bfloat16.BFloat16 {
		out := make([]bfloat16.BFloat16, rows*cols)
		for i := range out {
			out[i] = RoundBF16(float32(lo + (hi-lo)*r.Float64()))
		}
		return out
	}
	wide := func(x []bfloat16.BFloat16) []float64 {
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = float64(v.Float32())
		}
		return out
	}
	check := func(t *testing.T, got []bfloat16.BFloat16, want []float64, exact bool) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("got %d values, want %d", len(got), len(want))
		}
		same := 0
		for i, w := range want {
			ref, ok := nearestBF16(float32(w))
			if !ok {
				if g := got[i].Float32(); g == g {
					t.Fatalf("[%d] = %v, want NaN", i, got[i])
				}
				same++
				continue
			}
			d := int(got[i].Bits()) - int(ref)
			switch {
			case d == 0:
				same++
			case exact || d < -1 || d > 1:
				t.Fatalf("[%d] = %v (%#04x), want %v (%#04x) from %v", i, got[i], got[i].Bits(),
					bfloat16.FromBits(ref), ref, w)
			}
		}
		if frac := float64(same) / float64(len(want)); frac < 0.98 {
			t.Errorf("only %.1f%% of the results are the nearest bf16", 100*frac)
		}
	}
	tensor := func(x []bfloat16.BFloat16) *tensors.Tensor { return tensors.FromFlatDataAndDimensions(x, rows, cols) }

	unary := []struct {
		name   string
		lo, hi float64
		op     func(*graph.Node) *graph.Node
		ref    func(float64) float64
		exact  bool
	}{
		{"Sqrt", 0, 50, graph.Sqrt, math.Sqrt, true},
		{"Exp", -6, 6, graph.Exp, math.Exp, false},
		{"Expm1", -2, 2, graph.Expm1, math.Expm1, false},
		{"Log", 0.01, 100, graph.Log, math.Log, false},
		{"Log1p", -0.9, 10, graph.Log1p, math.Log1p, false},
		{"Rsqrt", 0.01, 100, graph.Rsqrt, func(x float64) float64 { return 1 / math.Sqrt(x) }, false},
		{"Tanh", -4, 4, graph.Tanh, math.Tanh, false},
		{"Logistic", -8, 8, graph.Sigmoid, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, false},
		{"Sin", -10, 10, graph.Sin, math.Sin, false},
		{"Cos", -10, 10, graph.Cos, math.Cos, false},
		{"Erf", -3, 3, graph.Erf, math.Erf, false},
	}
	for _, c := range unary {
		t.Run(c.name, func(t *testing.T) {
			x := gen(c.lo, c.hi)
			out := graph.MustExecOnce(b, c.op, tensor(x))
			want := wide(x)
			for i := range want {
				want[i] = c.ref(want[i])
			}
			check(t, tensors.MustCopyFlatData[bfloat16.BFloat16](out), want, c.exact)
		})
	}

	binary := []struct {
		name  string
		op    func(x, y *graph.Node) *graph.Node
		ref   func(x, y float64) float64
		exact bool
	}{
		{"Add", graph.Add, func(x, y float64) float64 { return x + y }, true},
		{"Sub", graph.Sub, func(x, y float64) float64 { return x - y }, true},
		{"Mul", graph.Mul, func(x, y float64) float64 { return x * y }, true},
		{"Div", graph.Div, func(x, y float64) float64 { return x / y }, true},
		{"Pow", graph.Pow, math.Pow, false},
	}
	for _, c := range binary {
		t.Run(c.name, func(t *testing.T) {
			x, y := gen(0.1, 4), gen(-3, 3)
			if c.name == "Div" {
				y = gen(0.5, 3)
			}
			out := graph.MustExecOnce(b, c.op, tensor(x), tensor(y))
			want, wy := wide(x), wide(y)
			for i := range want {
				want[i] = c.ref(want[i], wy[i])
			}
			check(t, tensors.MustCopyFlatData[bfloat16.BFloat16](out), want, c.exact)
		})
	}

	t.Run("AddBroadcast", func(t *testing.T) {
		x, y := gen(-3, 3), gen(-3, 3)[:cols]
		out := graph.MustExecOnce(b, func(x, y *graph.Node) *graph.Node {
			return graph.Add(x, graph.BroadcastToDims(graph.Reshape(y, 1, cols), rows, cols))
		}, tensor(x), tensors.FromFlatDataAndDimensions(y, cols))
		want, wy := wide(x), wide(y)
		for i := range want {
			want[i] += wy[i%cols]
		}
		check(t, tensors.MustCopyFlatData[bfloat16.BFloat16](out), want, true)
	})

	t.Run("ReduceSum", func(t *testing.T) {
		// Summed in float32 and rounded once (SimpleGo adds into a bf16
		// accumulator); the float64 sum stands for the float32 one.
		x := gen(-1, 1)
		out := graph.MustExecOnce(b, func(x *graph.Node) *graph.Node { return graph.ReduceSum(x, 1) }, tensor(x))
		wx := wide(x)
		want := make([]float64, rows)
		for i := range rows {
			for j := range cols {
				want[i] += wx[i*cols+j]
			}
		}
		check(t, tensors.MustCopyFlatData[bfloat16.BFloat16](out), want, false)
	})

	t.Run("ConvGeneral", func(t *testing.T) {
		// 1-D, channels last: out[b, i, o] = Σ_k,c x[b, i+k, c]·w[k, c, o],
		// accumulated in float32 and rounded once.
		const B, N, C, K, O = 2, 10, 3, 3, 4
		x, w := gen(-2, 2)[:B*N*C], gen(-2, 2)[:K*C*O]
		out := graph.MustExecOnce(b, func(x, w *graph.Node) *graph.Node { return graph.Convolve(x, w).Strides(1).NoPadding().Done() },
			tensors.FromFlatDataAndDimensions(x, B, N, C), tensors.FromFlatDataAndDimensions(w, K, C, O))
		wx, ww := wide(x), wide(w)
		want := make([]float64, 0, B*(N-K+1)*O)
		for bi := range B {
			for i := range N - K + 1 {
				for o := range O {
					s := 0.0
					for k := range K {
						for c := range C {
							s += wx[(bi*N+i+k)*C+c] * ww[(k*C+c)*O+o]
						}
					}
					want = append(want, s)
				}
			}
		}
		check(t, tensors.MustCopyFlatData[bfloat16.BFloat16](out), want, false)
	})

	t.Run("Iota", func(t *testing.T) {
		const n = 1000 // integers above 256 are not all bf16 values
		out := graph.MustExecOnce(b, func(g *graph.Graph) *graph.Node {
			return graph.Iota(g, shapes.Make(dtypes.BFloat16, n), 0)
		})
		want := make([]float64, n)
		for i := range want {
			want[i] = float64(i)
		}
		check(t, tensors.MustCopyFlatData[bfloat16.BFloat16](out), want, true)
	})

	t.Run("ConvertDType", func(t *testing.T) {
		f64 := make([]float64, rows*cols)
		i32 := make([]int32, rows*cols)
		f32 := make([]float32, rows*cols)
		for i := range f64 {
			f64[i] = r.NormFloat64() * 100
			i32[i] = int32(r.IntN(1 << 20))
			f32[i] = float32(r.NormFloat64())
		}
		f32[0], f32[1], f32[2] = float32(math.Inf(1)), float32(math.NaN()), math.Float32frombits(0x3f818000)
		conv := func(x *graph.Node) *graph.Node { return graph.ConvertDType(x, dtypes.BFloat16) }
		want := make([]float64, len(f64))
		for i := range want {
			want[i] = float64(float32(f64[i]))
		}
		check(t, tensors.MustCopyFlatData[bfloat16.BFloat16](graph.MustExecOnce(b, conv, tensors.FromFlatDataAndDimensions(f64, rows, cols))), want, true)
		for i := range want {
			want[i] = float64(i32[i])
		}
		check(t, tensors.MustCopyFlatData[bfloat16.BFloat16](graph.MustExecOnce(b, conv, tensors.FromFlatDataAndDimensions(i32, rows, cols))), want, true)
		for i := range want {
			want[i] = float64(f32[i])
		}
		check(t, tensors.MustCopyFlatData[bfloat16.BFloat16](graph.MustExecOnce(b, conv, tensors.FromFlatDataAndDimensions(f32, rows, cols))), want, true)
	})
}
