package backend

// SimpleGo (gomlx v0.26.0) rounds float32 to bfloat16 by truncation
// (bfloat16.FromFloat32 keeps the high 16 bits), whereas PyTorch, XLA and
// the hardware round to nearest even. Truncation biases every rounding
// towards zero by half an ulp on average, which adds up along the residual
// stream: on the golden llama-tiny its bf16 logits drifted from
// transformers' bf16 ones by mean 0.14 / max 1.1 instead of ≈ 0.09 / 0.8.
// This file rounds to nearest even in the two roundings that matter most
// and are easy to own: ConvertDType float32 → bfloat16 (weights cast for a
// bf16 forward, norm outputs, softmax probabilities) and bfloat16
// DotGeneral (run on internal/gemm in float32, which is exact for bf16
// products and also much faster than SimpleGo's bf16 kernel; see
// dotGeneralGemm). Element-wise bf16 ops still truncate.
//
// Same failing-safe rules as the other hooks: anything unexpected goes to
// the stock executor; GRPOKIT_GEMM=off turns both off.

import (
	"math"
	"reflect"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/grpokit/grpokit/internal/gemm"
)

var (
	stockConvert nodeExecutor
	cvShapeOff   uintptr // offset of simplego.Node.shape
)

// RoundBF16 rounds x to the nearest bfloat16, ties to even (torch's
// .to(torch.bfloat16)); NaN stays a (quiet) NaN.
func RoundBF16(x float32) bfloat16.BFloat16 {
	b := math.Float32bits(x)
	if x != x {
		return bfloat16.BFloat16(b>>16 | 0x40)
	}
	b += 0x7fff + (b>>16)&1
	return bfloat16.BFloat16(b >> 16)
}

// installBF16 replaces the ConvertDType executor; installGemm calls it once
// the gemm hook is in place.
func installBF16() {
	f, ok := reflect.TypeFor[simplego.Node]().FieldByName("shape")
	stockConvert = nodeExecutors[backends.OpTypeConvertDType]
	if !ok || f.Type != reflect.TypeFor[shapes.Shape]() || stockConvert == nil {
		return // stays stock (truncating)
	}
	cvShapeOff = f.Offset
	nodeExecutors[backends.OpTypeConvertDType] = convertBF16
}

// convertBF16 converts float32 to bfloat16 rounding to nearest even; every
// other pair goes to SimpleGo.
func convertBF16(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
	if mk := markOf(node); mk != nil {
		return carrier(b, mk, inputs, owned) // a bf16 weight's carrier (simplego_lowp.go)
	}
	to := *(*shapes.Shape)(unsafe.Add(unsafe.Pointer(node), cvShapeOff))
	if len(inputs) != 1 || to.DType != dtypes.BFloat16 {
		return stockConvert(b, node, inputs, owned)
	}
	in, err := b.BufferShape(inputs[0])
	if err != nil || in.DType != dtypes.Float32 || in.Size() != to.Size() {
		return stockConvert(b, node, inputs, owned)
	}
	flat, err := b.BufferData(inputs[0])
	src, ok := flat.([]float32)
	if err != nil || !ok {
		return stockConvert(b, node, inputs, owned)
	}
	out := newBuffer(b, to)
	if out == nil {
		return stockConvert(b, node, inputs, owned)
	}
	oflat, _ := b.BufferData(out)
	dst, ok := oflat.([]bfloat16.BFloat16)
	if !ok || len(dst) != len(src) {
		b.BufferFinalize(out)
		return stockConvert(b, node, inputs, owned)
	}
	for i, v := range src {
		dst[i] = RoundBF16(v)
	}
	return out, nil
}

// dotBF16 runs a bfloat16 DotGeneral [batch, m, k] × [batch, k, n] in
// float32 on gemm (bf16 products are exact in float32; accumulation is
// float32, as SimpleGo's and XLA's bf16 kernels) and rounds the result to
// nearest even.
func dotBF16(b *simplego.Backend, lhs, rhs []bfloat16.BFloat16, lhsDims, rhsDims []int, p dotGeneralAxes, batch, m, n, k int) (*simplego.Buffer, bool) {
	widen := func(x []bfloat16.BFloat16) []float32 {
		out := make([]float32, len(x))
		for i, v := range x {
			out[i] = v.Float32()
		}
		return out
	}
	a := operand(widen(lhs), lhsDims, p.lhsBatch, p.lhsContract, true)
	bm := operand(widen(rhs), rhsDims, p.rhsBatch, p.rhsContract, false)
	tmp := make([]float32, batch*m*n)
	gemm.Gemm(batch, m, n, k, a, bm, tmp)
	out := newBuffer(b, shapes.Make(dtypes.BFloat16, batch, m, n))
	if out == nil {
		return nil, false
	}
	oflat, _ := b.BufferData(out)
	dst, ok := oflat.([]bfloat16.BFloat16)
	if !ok || len(dst) != len(tmp) {
		return nil, false
	}
	for i, v := range tmp {
		dst[i] = RoundBF16(v)
	}
	return out, true
}

// dotGeneralAxes are a DotGeneral's batch and contracting axes.
type dotGeneralAxes struct{ lhsBatch, lhsContract, rhsBatch, rhsContract []int }
