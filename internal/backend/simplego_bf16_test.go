package backend

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

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
		{0x7f7fffff, 0x7f80}, // max float32 rounds to +Inf, as torch
		{0x7f800000, 0x7f80}, // +Inf
	} {
		if got := RoundBF16(math.Float32frombits(c.in)).Bits(); got != c.want {
			t.Errorf("RoundBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if v := RoundBF16(float32(math.NaN())).Float32(); v == v {
		t.Error("NaN did not stay NaN")
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
