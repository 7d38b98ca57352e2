package backend

// The flat float32 ops of the element-wise hook (simplego_elementwise.go):
// Add, Sub, Mul and Div of two operands of the same shape or of an operand
// and a single-element one, the unary Exp and Logistic, and Where. SimpleGo runs
// these as plain Go loops (Exp and Logistic through float64 math.Exp);
// internal/vec32 runs them with AVX2/AVX-512 loops (pure Go under the
// purego tag or on other CPUs).
//
// The binary results are bit-identical to SimpleGo's (one IEEE float32
// operation per element, in the same operand order). Exp is within 2 ulp
// of SimpleGo's float32(math.Exp(float64(x))), Logistic within 3 ulp of its
// float64 formula (see internal/vec32). Buffers follow SimpleGo's reuse
// protocol: an owned input of the output's shape becomes the output and
// its inputs entry is set to nil; otherwise a buffer comes from its pool.
// Where's result is exact.

import (
	"math"
	"slices"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/grpokit/grpokit/internal/vec32"
)

// vecOp maps the binary ops internal/vec32 has to its ops (a switch, not a
// map: the broadcasting ops call it once per contiguous run).
func vecOp(op binOp) (vec32.Op, bool) {
	switch op {
	case opAdd:
		return vec32.Add, true
	case opSub:
		return vec32.Sub, true
	case opMul:
		return vec32.Mul, true
	case opDiv:
		return vec32.Div, true
	}
	return 0, false
}

// flatBinary runs l op r when both have the output's shape or one has a
// single element; ok is false (inputs untouched) for anything else.
func flatBinary(b *simplego.Backend, op binOp, ls, rs, outShape shapes.Shape, l, r []float32,
	inputs []*simplego.Buffer, owned []bool) (out *simplego.Buffer, ok bool) {
	vop, ok := vecOp(op)
	n := outShape.Size()
	if !ok || outShape.DType != dtypes.Float32 || n <= 1 {
		return nil, false
	}
	const (
		vv = iota
		vs
		sv
	)
	var form int
	switch {
	case ls.Equal(rs) && ls.Equal(outShape):
		form = vv
	case len(r) == 1 && ls.Equal(outShape):
		form = vs
	case len(l) == 1 && rs.Equal(outShape):
		form = sv
	default:
		return nil, false
	}
	out, o, ok := binaryOutput(b, outShape, ls, rs, l, r, inputs, owned)
	if !ok {
		return nil, false
	}
	parallelFor(n, 3*n, 64, func(lo, hi int) {
		switch form {
		case vv:
			vec32.Binary(vop, o[lo:hi], l[lo:hi], r[lo:hi])
		case vs:
			vec32.BinaryScalar(vop, o[lo:hi], l[lo:hi], r[0])
		case sv:
			vec32.ScalarBinary(vop, o[lo:hi], l[0], r[lo:hi])
		}
	})
	return out, true
}

// sqrt32 and neg32 are SimpleGo's float32 Sqrt and Neg (same results).
func sqrt32(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = float32(math.Sqrt(float64(v)))
	}
}

func neg32(dst, x []float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = -v
	}
}

// unaryExec returns the executor of a float32 unary op computed by f; other
// dtypes go to SimpleGo.
func unaryExec(opType backends.OpType, f func(dst, x []float32)) nodeExecutor {
	return func(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
		stock := fastOpsStock[opType]
		if len(inputs) != 1 || len(owned) != 1 || fastOpsErr.Load() != nil {
			return stock(b, node, inputs, owned)
		}
		s, x, ok := f32Input(b, inputs, 0)
		if !ok || !s.Equal(nodeShape(node)) {
			return stock(b, node, inputs, owned)
		}
		// SimpleGo's unaryOperandAndOutput: an owned input is the output.
		out, o := inputs[0], x
		if owned[0] {
			inputs[0] = nil
		} else if out, o, ok = f32Output(b, s); !ok {
			return stock(b, node, inputs, owned)
		}
		parallelFor(len(o), 2*len(o), 64, func(lo, hi int) { f(o[lo:hi], x[lo:hi]) })
		fastOpsCalls.Add(1)
		return out, nil
	}
}

// convertBoolExec is ConvertDType from bool to float32 (a one-hot mask over
// the vocabulary, 1 or 0 as SimpleGo writes them) split over the cores;
// other conversions go to the executor before it.
func convertBoolExec(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
	stock := fastOpsStock[backends.OpTypeConvertDType]
	if len(inputs) != 1 || fastOpsErr.Load() != nil {
		return stock(b, node, inputs, owned)
	}
	outShape := nodeShape(node)
	s, err := b.BufferShape(inputs[0])
	if err != nil || s.DType != dtypes.Bool || outShape.DType != dtypes.Float32 || s.Size() != outShape.Size() {
		return stock(b, node, inputs, owned)
	}
	flat, err := b.BufferData(inputs[0])
	src, ok := flat.([]bool)
	if err != nil || !ok || len(src) != s.Size() {
		return stock(b, node, inputs, owned)
	}
	out, o, ok := f32Output(b, outShape)
	if !ok {
		return stock(b, node, inputs, owned)
	}
	parallelFor(len(o), len(o), 64, func(lo, hi int) {
		for i, v := range src[lo:hi] {
			o[lo+i] = 0
			if v {
				o[lo+i] = 1
			}
		}
	})
	fastOpsCalls.Add(1)
	return out, nil
}

// whereExec is Where with a bool condition of the output's shape and
// float32 branches of the output's shape or scalars (SimpleGo's own
// cases, less a scalar condition, which stays with SimpleGo).
func whereExec(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
	stock := fastOpsStock[backends.OpTypeWhere]
	if len(inputs) != 3 || len(owned) != 3 || fastOpsErr.Load() != nil {
		return stock(b, node, inputs, owned)
	}
	outShape := nodeShape(node)
	cs, err := b.BufferShape(inputs[0])
	cf, err2 := b.BufferData(inputs[0])
	cond, okC := cf.([]bool)
	ts, t, okT := f32Input(b, inputs, 1)
	fs, f, okF := f32Input(b, inputs, 2)
	branchOK := func(s shapes.Shape) bool { return s.IsScalar() || s.Equal(outShape) }
	if err != nil || err2 != nil || !okC || !okT || !okF || outShape.DType != dtypes.Float32 || cs.DType != dtypes.Bool ||
		cs.IsScalar() || !slices.Equal(cs.Dimensions, outShape.Dimensions) || len(cond) != outShape.Size() ||
		!branchOK(ts) || !branchOK(fs) {
		return stock(b, node, inputs, owned)
	}
	var out *simplego.Buffer
	var o []float32
	switch { // SimpleGo's execWhere
	case ts.Equal(outShape) && owned[1]:
		out, o, inputs[1] = inputs[1], t, nil
	case fs.Equal(outShape) && owned[2]:
		out, o, inputs[2] = inputs[2], f, nil
	default:
		var ok bool
		if out, o, ok = f32Output(b, outShape); !ok {
			return stock(b, node, inputs, owned)
		}
	}
	part := func(x []float32, lo, hi int) []float32 {
		if len(x) == 1 {
			return x
		}
		return x[lo:hi]
	}
	parallelFor(len(o), 4*len(o), 64, func(lo, hi int) {
		vec32.Where(o[lo:hi], cond[lo:hi], part(t, lo, hi), part(f, lo, hi))
	})
	fastOpsCalls.Add(1)
	return out, nil
}
