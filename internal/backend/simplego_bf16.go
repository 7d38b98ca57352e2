package backend

// SimpleGo (gomlx v0.26.0) rounds float32 to bfloat16 by truncation
// (bfloat16.FromFloat32 keeps the high 16 bits) in every bf16 op, and some
// of its bf16 kernels also accumulate in bf16 (ReduceSum adds into a bf16
// output). PyTorch, XLA and the hardware compute a bf16 op in float32 and
// round the result once, to nearest even. Truncation biases every rounding
// towards zero by half an ulp on average, which adds up along the residual
// stream of a bf16 forward.
//
// This file makes every bf16 result of the "go" backend that is not exact
// by nature round to nearest even, the way XLA computes bf16 on a CPU: an
// op whose output is bfloat16 (one of roundOps) gets its bf16 inputs
// widened to float32 (exact), runs the float32 executor in place (grpokit's
// fast one where there is one, else SimpleGo's) on a copy of the node
// whose output dtype is float32, and its result is rounded once with
// RoundBF16. Ops whose bf16 result is exact (Max, Min, Neg, Abs, Where,
// Reshape, Transpose, Gather, Slice, …) are left alone.
//
// The ConvertDType executor is also where bf16 weight carriers live
// (simplego_lowp.go): installBF16 keeps that, and installRoundBF16 wraps
// the result. Failing safe: if simplego.Node has no `shape shapes.Shape`
// field, nothing is wrapped and RoundBF16Ops says why.

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

var (
	stockConvert nodeExecutor

	roundOnce   sync.Once
	roundErr    atomic.Pointer[error] // nil while the wrappers are in place
	roundCalls  atomic.Int64          // bf16 ops rounded by the wrapper, for tests
	rnShapeOff  uintptr               // offset of simplego.Node.shape
	roundedOps  [backends.OpTypeLast]bool
	roundInner  [backends.OpTypeLast]nodeExecutor
	roundUnused = errors.New("backend: bf16 rounding not installed yet (no go backend made)")
)

// roundOps are the ops whose bfloat16 results SimpleGo rounds by
// truncation (or accumulates in bf16): each runs in float32 and rounds
// once.
var roundOps = []backends.OpType{
	backends.OpTypeAdd, backends.OpTypeSub, backends.OpTypeMul, backends.OpTypeDiv,
	backends.OpTypePow, backends.OpTypeRem,
	backends.OpTypeExp, backends.OpTypeExpm1, backends.OpTypeLog, backends.OpTypeLog1p,
	backends.OpTypeSqrt, backends.OpTypeRsqrt, backends.OpTypeCos, backends.OpTypeSin,
	backends.OpTypeTanh, backends.OpTypeLogistic, backends.OpTypeErf,
	backends.OpTypeReduceSum, backends.OpTypeReduceProduct, backends.OpTypeReduceWindow,
	backends.OpTypeScatterSum, backends.OpTypeIota,
	backends.OpTypeDotGeneral, backends.OpTypeConvGeneral, backends.OpTypeConvertDType,
}

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

// RoundBF16Ops reports whether the bfloat16 ops of the "go" backend round
// to nearest even (nil) or truncate as SimpleGo does (the error says why).
// It is meaningful once a "go" backend has been made.
func RoundBF16Ops() error {
	if p := roundErr.Load(); p != nil {
		return *p
	}
	if !roundedOps[backends.OpTypeAdd] {
		return roundUnused
	}
	return nil
}

// installBF16 puts convertBF16 (the bf16 weight carriers' ConvertDType) in
// place; installGemm calls it before installLowp.
func installBF16() {
	stockConvert = nodeExecutors[backends.OpTypeConvertDType]
	if stockConvert != nil {
		nodeExecutors[backends.OpTypeConvertDType] = convertBF16
	}
}

// convertBF16 runs a bf16 weight's carrier (simplego_lowp.go); every other
// conversion goes to SimpleGo (and, to bf16, through roundF32).
func convertBF16(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
	if mk := markOf(node); mk != nil {
		return carrier(b, mk, inputs, owned)
	}
	return stockConvert(b, node, inputs, owned)
}

// installRoundBF16 wraps the executors of roundOps (after the other hooks,
// so that the float32 work runs on theirs); New calls it when it makes a
// "go" backend.
func installRoundBF16() {
	roundOnce.Do(func() {
		f, ok := reflect.TypeFor[simplego.Node]().FieldByName("shape")
		if !ok || f.Type != reflect.TypeFor[shapes.Shape]() {
			err := errors.New("backend: bf16 rounding off: simplego.Node has no `shape shapes.Shape` field")
			roundErr.Store(&err)
			return
		}
		rnShapeOff = f.Offset
		for _, op := range roundOps {
			if nodeExecutors[op] == nil {
				err := fmt.Errorf("backend: bf16 rounding off: SimpleGo has no %s executor", op)
				roundErr.Store(&err)
				return
			}
		}
		for _, op := range roundOps {
			roundInner[op] = nodeExecutors[op]
			roundedOps[op] = true
			op := op
			nodeExecutors[op] = func(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
				return roundF32(roundInner[op], b, node, inputs, owned)
			}
		}
	})
}

// roundF32 runs a node whose output is bfloat16 in float32 with inner and
// rounds the result to nearest even; other nodes go to inner unchanged.
func roundF32(inner nodeExecutor, b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
	shape := *(*shapes.Shape)(unsafe.Add(unsafe.Pointer(node), rnShapeOff))
	if shape.DType != dtypes.BFloat16 {
		return inner(b, node, inputs, owned)
	}
	// A float32 input of a conversion rounds directly (the weights cast
	// for a bf16 forward: no float32 copy).
	if len(inputs) == 1 {
		if s, err := b.BufferShape(inputs[0]); err == nil && s.DType == dtypes.Float32 && s.Size() == shape.Size() {
			if flat, err := b.BufferData(inputs[0]); err == nil {
				if src, ok := flat.([]float32); ok {
					out := newBuffer(b, shape)
					if out == nil {
						return nil, fmt.Errorf("backend: bf16 rounding: no buffer for %s", shape)
					}
					if err := roundInto(b, out, src); err != nil {
						return nil, err
					}
					roundCalls.Add(1)
					return out, nil
				}
			}
		}
	}
	wide := make([]*simplego.Buffer, len(inputs))
	wideOwned := make([]bool, len(inputs))
	temp := make([]bool, len(inputs))
	for i, in := range inputs {
		wide[i], wideOwned[i] = in, owned[i]
		s, err := b.BufferShape(in)
		if err != nil || s.DType != dtypes.BFloat16 {
			continue // bool, integer or a weight proxy: as it is
		}
		flat, err := b.BufferData(in)
		src, ok := flat.([]bfloat16.BFloat16)
		if err != nil || !ok {
			continue
		}
		w := newBuffer(b, shapes.Make(dtypes.Float32, s.Dimensions...))
		if w == nil {
			freeTemps(b, wide, temp)
			return nil, fmt.Errorf("backend: bf16 rounding: no buffer for %s", s)
		}
		wflat, _ := b.BufferData(w)
		dst := wflat.([]float32)
		parallelFor(len(src), 3*len(src), 16, func(lo, hi int) {
			for j := lo; j < hi; j++ {
				dst[j] = src[j].Float32()
			}
		})
		wide[i], wideOwned[i], temp[i] = w, true, true
	}
	cp := *node
	*(*shapes.Shape)(unsafe.Add(unsafe.Pointer(&cp), rnShapeOff)) = shapes.Make(dtypes.Float32, shape.Dimensions...)
	res, err := inner(b, &cp, wide, wideOwned)
	for i := range wide {
		if !temp[i] && wide[i] == nil {
			inputs[i] = nil // a pass-through input the executor took over
		}
	}
	freeTemps(b, wide, temp)
	if err != nil {
		return nil, err
	}
	rs, err1 := b.BufferShape(res)
	flat, err2 := b.BufferData(res)
	src, ok := flat.([]float32)
	if err1 != nil || err2 != nil || !ok || rs.Size() != shape.Size() {
		return nil, fmt.Errorf("backend: bf16 rounding: float32 executor gave %s for %s", rs, shape)
	}
	// The result goes into an input of the same shape this node may free,
	// as SimpleGo's own executors do, or into a new buffer.
	var out *simplego.Buffer
	for i, in := range inputs {
		if in != nil && owned[i] {
			if s, err := b.BufferShape(in); err == nil && s.Equal(shape) {
				out, inputs[i] = in, nil
				break
			}
		}
	}
	if out == nil {
		if out = newBuffer(b, shape); out == nil {
			_ = b.BufferFinalize(res)
			return nil, fmt.Errorf("backend: bf16 rounding: no buffer for %s", shape)
		}
	}
	err = roundInto(b, out, src)
	_ = b.BufferFinalize(res)
	if err != nil {
		return nil, err
	}
	roundCalls.Add(1)
	return out, nil
}

// roundInto writes RoundBF16 of src into the bf16 buffer out.
func roundInto(b *simplego.Backend, out *simplego.Buffer, src []float32) error {
	oflat, _ := b.BufferData(out)
	dst, ok := oflat.([]bfloat16.BFloat16)
	if !ok || len(dst) != len(src) {
		return fmt.Errorf("backend: bf16 rounding: output buffer holds %T, want %d bfloat16", oflat, len(src))
	}
	parallelFor(len(src), 3*len(src), 16, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			dst[j] = RoundBF16(src[j])
		}
	})
	return nil
}

// freeTemps returns the widened copies the executor did not take over.
func freeTemps(b *simplego.Backend, wide []*simplego.Buffer, temp []bool) {
	for i, w := range wide {
		if temp[i] && w != nil {
			_ = b.BufferFinalize(w)
		}
	}
}
