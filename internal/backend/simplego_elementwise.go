package backend

// This file is the second (and last) place where grpokit reaches inside
// GoMLX's SimpleGo backend, in the same way as simplego_gemm.go: it swaps
// entries of the unexported nodeExecutors array for float32 executors of
// the ops that dominate once matmuls are fast.
//
//   - Add, Sub, Mul, Div, Max, Min, Pow when the operands broadcast against
//     each other (shapes differ and neither has a single element), and
//     Equal of such int32 or float32 operands (one-hot encodings);
//   - Add, Sub, Mul, Div of same-shape operands or with a single-element
//     operand, Exp, Logistic and Where, on internal/vec32's SIMD loops,
//     and Sqrt and Neg (simplego_flatops.go);
//   - BroadcastInDim, ReduceSum, ReduceMax, ReduceMin and Transpose
//     (simplego_axes.go).
//
// The inner loops are in simplego_binloops.go. Ops on large tensors are
// split across goroutines (parallel.go).
//
// SimpleGo runs these with a per-element index iterator that costs far
// more than the arithmetic. The replacements first collapse adjacent axes
// that behave alike (same broadcast pattern, all reduced or all kept, still
// adjacent after the transpose) and then walk the few remaining axes with
// plain offsets, the innermost one as a tight loop over a contiguous run,
// or as block copies. Each output element is computed with the same
// float32 operations in the same order as SimpleGo's, so results are
// bit-identical (but Exp and Logistic, within a few ulp: see
// simplego_flatops.go).
//
// Failing safe: every other dtype (but Equal's int32), Max, Min and Pow of
// same-shape or single-element operands (plain loops in SimpleGo already)
// and anything unexpected go to the stock executor, kept at install time. The Node
// fields read (shape, data) are checked with reflect once.
// GRPOKIT_FASTOPS=off leaves SimpleGo untouched; FastElementwise says
// whether the hook is in place.

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/grpokit/grpokit/internal/vec32"
)

// FastOpsEnvVar is the environment variable that turns the element-wise
// hook off when set to "off" (read once, when the first "go" backend is
// made).
const FastOpsEnvVar = "GRPOKIT_FASTOPS"

var (
	fastOpsOnce  sync.Once
	fastOpsErr   atomic.Pointer[error] // nil while the hook is in place
	fastOpsStock [backends.OpTypeLast]nodeExecutor
	fastOpsCalls atomic.Int64 // ops run by the hook, for tests
	ewShapeOff   uintptr      // offset of simplego.Node.shape
	ewDataOff    uintptr      // offset of simplego.Node.data
)

// FastElementwise reports whether the float32 element-wise ops (Add, Sub,
// Mul, Div, Max, Min, Pow, Equal, Exp, Logistic, Sqrt, Neg, Where, bool to
// float32 conversion), BroadcastInDim, Slice,
// ScatterSum of whole rows (KV-cache writes),
// reductions and Transpose of the "go" backend run on
// grpokit's executors (nil) or on SimpleGo's own (the error says why). It
// is meaningful once a "go" backend has been made.
func FastElementwise() error {
	if p := fastOpsErr.Load(); p != nil {
		return *p
	}
	if fastOpsStock[backends.OpTypeAdd] == nil {
		return errors.New("backend: element-wise hook not installed yet (no go backend made)")
	}
	return nil
}

// fastOps lists the executors the hook installs.
var fastOps = map[backends.OpType]nodeExecutor{
	backends.OpTypeAdd:            binaryExec(opAdd),
	backends.OpTypeSub:            binaryExec(opSub),
	backends.OpTypeMul:            withFused(binaryExec(opMul)), // and fused chains: simplego_fused.go
	backends.OpTypeDiv:            binaryExec(opDiv),
	backends.OpTypeMax:            binaryExec(opMax),
	backends.OpTypeMin:            binaryExec(opMin),
	backends.OpTypePow:            binaryExec(opPow),
	backends.OpTypeEqual:          equalExec,
	backends.OpTypeBroadcastInDim: broadcastInDimExec,
	backends.OpTypeReduceSum:      reduceExec(backends.OpTypeReduceSum),
	backends.OpTypeReduceMax:      reduceExec(backends.OpTypeReduceMax),
	backends.OpTypeReduceMin:      reduceExec(backends.OpTypeReduceMin),
	backends.OpTypeTranspose:      transposeExec,
	backends.OpTypeExp:            unaryExec(backends.OpTypeExp, vec32.Exp),
	backends.OpTypeLogistic:       unaryExec(backends.OpTypeLogistic, vec32.Logistic),
	backends.OpTypeSqrt:           unaryExec(backends.OpTypeSqrt, sqrt32),
	backends.OpTypeNeg:            unaryExec(backends.OpTypeNeg, neg32),
	backends.OpTypeWhere:          withFused(whereExec),
	backends.OpTypeScatterSum:     scatterRowsExec,
	backends.OpTypeConvertDType:   convertBoolExec,
	backends.OpTypeSlice:          sliceExec,
}

// installFastOps puts the executors of fastOps in place; New calls it when
// it makes a "go" backend.
func installFastOps() {
	fastOpsOnce.Do(func() {
		fail := func(err error) { fastOpsErr.Store(&err) }
		if strings.EqualFold(os.Getenv(FastOpsEnvVar), "off") {
			fail(fmt.Errorf("backend: element-wise hook disabled by %s=off", FastOpsEnvVar))
			return
		}
		t := reflect.TypeFor[simplego.Node]()
		fs, ok1 := t.FieldByName("shape")
		fd, ok2 := t.FieldByName("data")
		if !ok1 || fs.Type != reflect.TypeFor[shapes.Shape]() || !ok2 || fd.Type != reflect.TypeFor[any]() {
			fail(errors.New("backend: element-wise hook off: simplego.Node has no `shape shapes.Shape` and `data any` fields"))
			return
		}
		ewShapeOff, ewDataOff = fs.Offset, fd.Offset
		for op := range fastOps {
			if nodeExecutors[op] == nil {
				fail(fmt.Errorf("backend: element-wise hook off: SimpleGo has no %s executor", op))
				return
			}
		}
		for op, exec := range fastOps {
			fastOpsStock[op] = nodeExecutors[op]
			nodeExecutors[op] = exec
		}
	})
}

func nodeShape(n *simplego.Node) shapes.Shape {
	return *(*shapes.Shape)(unsafe.Add(unsafe.Pointer(n), ewShapeOff))
}

func nodeData(n *simplego.Node) any {
	return *(*any)(unsafe.Add(unsafe.Pointer(n), ewDataOff))
}

// f32Input returns input i's shape and data if it is a float32 buffer.
func f32Input(b *simplego.Backend, inputs []*simplego.Buffer, i int) (shapes.Shape, []float32, bool) {
	s, err := b.BufferShape(inputs[i])
	if err != nil || s.DType != dtypes.Float32 {
		return s, nil, false
	}
	flat, err := b.BufferData(inputs[i])
	data, ok := flat.([]float32)
	return s, data, err == nil && ok && len(data) == s.Size()
}

// f32Output returns a new float32 buffer of the given shape from
// SimpleGo's pool.
func f32Output(b *simplego.Backend, s shapes.Shape) (*simplego.Buffer, []float32, bool) {
	out := newBuffer(b, s)
	if out == nil {
		return nil, nil, false
	}
	flat, _ := b.BufferData(out)
	data, ok := flat.([]float32)
	return out, data, ok && len(data) == s.Size()
}

// binaryOutput picks a binary op's output by SimpleGo's reuse protocol
// (binaryOperandsAndOutput): an owned input of the output's shape, the
// right one first, becomes the output and is dropped from inputs; else a
// new buffer. ok is false, inputs untouched, when no buffer can be had.
func binaryOutput(b *simplego.Backend, outShape, ls, rs shapes.Shape, l, r []float32,
	inputs []*simplego.Buffer, owned []bool) (out *simplego.Buffer, o []float32, ok bool) {
	switch {
	case owned[1] && rs.Equal(outShape):
		out, o, inputs[1] = inputs[1], r, nil
	case owned[0] && ls.Equal(outShape):
		out, o, inputs[0] = inputs[0], l, nil
	default:
		return f32Output(b, outShape)
	}
	return out, o, true
}

type binOp uint8

const (
	opAdd binOp = iota
	opSub
	opMul
	opDiv
	opMax
	opMin
	opPow
)

var binOpTypes = [...]backends.OpType{opAdd: backends.OpTypeAdd, opSub: backends.OpTypeSub, opMul: backends.OpTypeMul,
	opDiv: backends.OpTypeDiv, opMax: backends.OpTypeMax, opMin: backends.OpTypeMin, opPow: backends.OpTypePow}

// binaryExec returns the executor of op: float32 operands that broadcast
// against each other run on broadcastBinary, the rest on SimpleGo.
func binaryExec(op binOp) nodeExecutor {
	opType := binOpTypes[op]
	return func(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
		stock := fastOpsStock[opType]
		if len(inputs) != 2 || len(owned) != 2 || fastOpsErr.Load() != nil {
			return stock(b, node, inputs, owned)
		}
		ls, l, ok1 := f32Input(b, inputs, 0)
		rs, r, ok2 := f32Input(b, inputs, 1)
		outShape := nodeShape(node)
		if !ok1 || !ok2 || outShape.DType != dtypes.Float32 {
			return stock(b, node, inputs, owned)
		}
		if len(l) == 1 || len(r) == 1 || ls.Equal(rs) { // flat: simplego_flatops.go
			out, ok := flatBinary(b, op, ls, rs, outShape, l, r, inputs, owned)
			if !ok {
				return stock(b, node, inputs, owned)
			}
			fastOpsCalls.Add(1)
			return out, nil
		}
		axes, ok := collapseBinary(ls.Dimensions, rs.Dimensions, outShape.Dimensions)
		if !ok {
			return stock(b, node, inputs, owned)
		}
		out, o, ok := binaryOutput(b, outShape, ls, rs, l, r, inputs, owned)
		if !ok {
			return stock(b, node, inputs, owned)
		}
		broadcastBinary(op, axes, o, l, r)
		fastOpsCalls.Add(1)
		return out, nil
	}
}

// bAxis is one collapsed axis of a broadcasting binary op: its size and
// the strides of lhs, rhs (0 where that side repeats) and the output.
type bAxis struct{ n, ls, rs, os int }

// collapseBinary drops the size-1 output axes and merges adjacent axes
// with the same broadcast pattern. ok is false unless lhs and rhs have
// the output's rank and each of their dimensions is the output's or 1.
func collapseBinary(ld, rd, od []int) (axes []bAxis, ok bool) {
	if len(ld) != len(od) || len(rd) != len(od) {
		return nil, false
	}
	axes = make([]bAxis, 0, len(od))
	lStride, rStride, oStride := 1, 1, 1
	prevKind := -1
	for ax := len(od) - 1; ax >= 0; ax-- { // innermost first
		n, l, r := od[ax], ld[ax], rd[ax]
		if (l != n && l != 1) || (r != n && r != 1) || n < 1 {
			return nil, false
		}
		if n == 1 {
			continue
		}
		kind := 0 // bit 0: lhs repeats, bit 1: rhs repeats
		a := bAxis{n: n, ls: lStride, rs: rStride, os: oStride}
		if l == 1 {
			kind, a.ls = kind|1, 0
		}
		if r == 1 {
			kind, a.rs = kind|2, 0
		}
		if kind == prevKind { // same pattern as the axis inside: one longer axis
			axes[len(axes)-1].n *= n
		} else {
			axes = append(axes, a)
		}
		prevKind = kind
		lStride, rStride, oStride = lStride*l, rStride*r, oStride*n
	}
	// Reverse to outermost first.
	for i, j := 0, len(axes)-1; i < j; i, j = i+1, j-1 {
		axes[i], axes[j] = axes[j], axes[i]
	}
	return axes, len(axes) > 0
}

// walkRuns calls run with the lhs, rhs and output offsets of every
// innermost run of the collapsed axes: the outermost axis split across
// goroutines (parallelFor), in output order within each. run must only
// write the output run it is given.
func walkRuns(axes []bAxis, run func(lo, ro, oo int)) {
	last := len(axes) - 1
	var walk func(ax, lo, ro, oo int)
	walk = func(ax, lo, ro, oo int) {
		if ax == last {
			run(lo, ro, oo)
			return
		}
		a := axes[ax]
		for i := range a.n {
			walk(ax+1, lo+i*a.ls, ro+i*a.rs, oo+i*a.os)
		}
	}
	if last == 0 {
		walk(0, 0, 0, 0)
		return
	}
	a := axes[0]
	parallelFor(a.n, 3*a.n*a.os, 1, func(i0, i1 int) {
		for i := i0; i < i1; i++ {
			walk(1, i*a.ls, i*a.rs, i*a.os)
		}
	})
}

// broadcastBinary computes o = l op r over the collapsed axes.
func broadcastBinary(op binOp, axes []bAxis, o, l, r []float32) {
	in := axes[len(axes)-1]
	walkRuns(axes, func(lo, ro, oo int) {
		out := o[oo : oo+in.n]
		switch {
		case in.ls == 0:
			binScalarVec(op, out, l[lo], r[ro:ro+in.n])
		case in.rs == 0:
			binVecScalar(op, out, l[lo:lo+in.n], r[ro])
		default:
			binVecVec(op, out, l[lo:lo+in.n], r[ro:ro+in.n])
		}
	})
}

// equalExec is Equal with broadcasting for int32 (one-hot encodings
// compare an iota with labels) and float32 operands.
func equalExec(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
	stock := fastOpsStock[backends.OpTypeEqual]
	if len(inputs) != 2 || fastOpsErr.Load() != nil {
		return stock(b, node, inputs, owned)
	}
	ls, err1 := b.BufferShape(inputs[0])
	rs, err2 := b.BufferShape(inputs[1])
	outShape := nodeShape(node)
	if err1 != nil || err2 != nil || ls.DType != rs.DType || outShape.DType != dtypes.Bool ||
		ls.Size() == 1 || rs.Size() == 1 || ls.Equal(rs) {
		return stock(b, node, inputs, owned)
	}
	axes, ok := collapseBinary(ls.Dimensions, rs.Dimensions, outShape.Dimensions)
	if !ok {
		return stock(b, node, inputs, owned)
	}
	lf, err1 := b.BufferData(inputs[0])
	rf, err2 := b.BufferData(inputs[1])
	out := newBuffer(b, outShape)
	if err1 != nil || err2 != nil || out == nil {
		return stock(b, node, inputs, owned)
	}
	of, _ := b.BufferData(out)
	o, okO := of.([]bool)
	sizes := [3]int{outShape.Size(), ls.Size(), rs.Size()}
	switch l := lf.(type) {
	case []int32:
		r, okR := rf.([]int32)
		ok = okO && okR && equalRuns(axes, o, l, r, sizes)
	case []float32:
		r, okR := rf.([]float32)
		ok = okO && okR && equalRuns(axes, o, l, r, sizes)
	default:
		ok = false
	}
	if !ok {
		_ = b.BufferFinalize(out)
		return stock(b, node, inputs, owned)
	}
	fastOpsCalls.Add(1)
	return out, nil
}

// equalRuns writes o = (l == r); it returns false, writing nothing, if
// the flat lengths are not the output's, lhs's and rhs's sizes.
func equalRuns[T int32 | float32](axes []bAxis, o []bool, l, r []T, sizes [3]int) bool {
	if len(o) != sizes[0] || len(l) != sizes[1] || len(r) != sizes[2] {
		return false
	}
	in := axes[len(axes)-1]
	walkRuns(axes, func(lo, ro, oo int) {
		out := o[oo : oo+in.n]
		switch {
		case in.ls == 0:
			c, rr := l[lo], r[ro:ro+in.n]
			for i := range out {
				out[i] = c == rr[i]
			}
		case in.rs == 0:
			ll, c := l[lo:lo+in.n], r[ro]
			for i := range out {
				out[i] = ll[i] == c
			}
		default:
			ll, rr := l[lo:lo+in.n], r[ro:ro+in.n]
			for i := range out {
				out[i] = ll[i] == rr[i]
			}
		}
	})
	return true
}
