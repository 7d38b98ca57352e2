package backend

// Fused element-wise chains on SimpleGo: a model builds one graph node
// where it would build a chain of element-wise ops (SwiGLU, a masked
// softmax, RMSNorm, RoPE and their gradients), and the node's executor
// runs the whole chain in one pass over memory, row by row, on both
// cores. The node is an ordinary Mul or Where with the chain's inputs (so
// its shape and bookkeeping are SimpleGo's own) marked with MarkFused,
// which replaces its data; the marked node always runs here. Package
// internal/fused builds the nodes and their gradients.
//
// The forward chains compute each element with the float32 operations of
// the graph they replace, in the same order (sums in index order, as
// reduceRange), so their results are the same bit for bit; the gradient
// kernels are the analytic derivatives, evaluated in float32.

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"

	"github.com/grpokit/grpokit/internal/vec32"
)

// FusedKind names a fused chain and the node that carries it.
type FusedKind uint8

// The fused chains. H is the last axis (a row); x̂ = x/r with
// r = √(mean(x²) + eps) over a row.
const (
	// FusedSwiGLU, on Mul(g, u): g·σ(g)·u.
	FusedSwiGLU FusedKind = iota + 1
	// FusedSiLUGrad, on Mul(a, g): a·σ(g)·(1 + g·(1−σ(g))), the
	// derivative of g·σ(g) times a.
	FusedSiLUGrad
	// FusedSoftmax, on Where(mask, x, Fill) with mask and x of the same
	// shape: softmax over the last axis of (mask ? x·Scale : Fill).
	FusedSoftmax
	// FusedSoftmaxGrad, on Where(mask, p, v): mask ? p·(v − Σ v·p)·Scale : 0
	// (Σ over the row), the gradient of FusedSoftmax's x given its output
	// p and the gradient v of p.
	FusedSoftmaxGrad
	// FusedRMSNorm, on Mul(x, w) with w [1, …, 1, H]: x̂·w.
	FusedRMSNorm
	// FusedRMSNormGrad, on Mul(x, g): (g − x̂·mean(g·x̂))/r, the gradient of
	// x given the gradient g of x̂.
	FusedRMSNormGrad
	// FusedRMSNormScale, on Mul(x, v): v·x̂ (w's gradient before the sum).
	FusedRMSNormScale
	// FusedRoPE, on Mul(x, cs) with x [..., heads, hd] and cs [..., 1, hd]
	// holding cos then sin of the hd/2 angles of a row: x·cos +
	// rotate_half(x)·sin (HF's layout, frequency j = j + hd/2); with
	// Inverse its transpose, the gradient.
	FusedRoPE
)

// FusedParams are a fused node's constants.
type FusedParams struct {
	Scale, Fill float32 // FusedSoftmax, FusedSoftmaxGrad (Scale)
	Eps         float32 // the RMSNorm kinds
	Inverse     bool    // FusedRoPE
}

type fusedMark struct {
	kind FusedKind
	p    FusedParams
}

// fusedCalls counts the fused nodes run, for tests.
var fusedCalls [FusedRoPE + 1]atomic.Int64

// FusedOps reports whether the nodes of MarkFused run fused on b: b is the
// "go" backend with the element-wise and product hooks in place. When it
// is false, build the plain chain instead.
func FusedOps(b backends.Backend) bool {
	return IsGo(b) && FastElementwise() == nil && lowpReady
}

// FusedRuns returns how many nodes of kind k have run fused since the
// process started (for tests).
func FusedRuns(k FusedKind) int64 { return fusedCalls[k].Load() }

// MarkFused marks n, a Mul or Where node as the kind's comment says, to
// run chain k; FusedOps(n's backend) must be true. It panics (graph
// building) on a node of the wrong form.
func MarkFused(n *graph.Node, k FusedKind, p FusedParams) {
	want := backends.OpTypeMul
	if k == FusedSoftmax || k == FusedSoftmaxGrad {
		want = backends.OpTypeWhere
	}
	ops := *(*[]backends.Op)(unsafe.Add(unsafe.Pointer(n), outputOpsOff))
	if len(ops) != 1 {
		panic(fmt.Sprintf("backend: MarkFused: node %s has %d backend ops", n, len(ops)))
	}
	sn, ok := ops[0].(*simplego.Node)
	if !ok {
		panic(fmt.Sprintf("backend: MarkFused: node %s is not a SimpleGo node", n))
	}
	if t := reflect.ValueOf(sn).Elem().FieldByName("opType").Int(); backends.OpType(t) != want {
		panic(fmt.Sprintf("backend: MarkFused: chain %d must be carried by a %v, got %v", k, want, backends.OpType(t)))
	}
	*(*any)(unsafe.Add(unsafe.Pointer(sn), nodeDataOff)) = &fusedMark{kind: k, p: p}
}

// withFused returns exec for unmarked nodes and runs marked ones fused.
func withFused(exec nodeExecutor) nodeExecutor {
	return func(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
		mk, _ := (*(*any)(unsafe.Add(unsafe.Pointer(node), nodeDataOff))).(*fusedMark)
		if mk == nil {
			return exec(b, node, inputs, owned)
		}
		out, err := runFused(b, node, mk, inputs, owned)
		if err != nil {
			return nil, fmt.Errorf("backend: fused chain %d: %w", mk.kind, err)
		}
		fusedCalls[mk.kind].Add(1)
		return out, nil
	}
}

// runFused checks a marked node's operands and runs its chain.
func runFused(b *simplego.Backend, node *simplego.Node, mk *fusedMark, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
	outShape := nodeShape(node)
	if outShape.DType != dtypes.Float32 || outShape.Rank() == 0 {
		return nil, fmt.Errorf("output %s is not a float32 array", outShape)
	}
	h := outShape.Dimensions[outShape.Rank()-1]
	rows := outShape.Size() / max(h, 1)
	switch mk.kind {
	case FusedSoftmax, FusedSoftmaxGrad:
		if len(inputs) != 3 {
			return nil, errors.New("want 3 operands")
		}
		mf, err := b.BufferData(inputs[0])
		mask, ok := mf.([]bool)
		if err != nil || !ok || len(mask) != outShape.Size() {
			return nil, errors.New("the mask is not a bool array of the output's shape")
		}
		xs, x, ok1 := f32Input(b, inputs, 1)
		vs, v, ok2 := f32Input(b, inputs, 2)
		if !ok1 || !xs.Equal(outShape) || !ok2 || (mk.kind == FusedSoftmax) != vs.IsScalar() || (!vs.IsScalar() && !vs.Equal(outShape)) {
			return nil, fmt.Errorf("operands %s, %s do not fit the output %s", xs, vs, outShape)
		}
		out, o, ok := binaryOutput(b, outShape, xs, vs, x, v, inputs[1:], owned[1:])
		if !ok {
			return nil, errors.New("no output buffer")
		}
		parallelFor(rows, 3*len(o), 1, func(lo, hi int) {
			a, z := lo*h, hi*h
			if mk.kind == FusedSoftmax {
				softmaxRows(o[a:z], mask[a:z], x[a:z], h, mk.p.Scale, v[0])
			} else {
				softmaxGradRows(o[a:z], mask[a:z], x[a:z], v[a:z], h, mk.p.Scale)
			}
		})
		return out, nil
	}
	if len(inputs) != 2 {
		return nil, errors.New("want 2 operands")
	}
	xs, x, ok1 := f32Input(b, inputs, 0)
	ys, y, ok2 := f32Input(b, inputs, 1)
	if !ok1 || !ok2 || !xs.Equal(outShape) {
		return nil, fmt.Errorf("operands %s, %s do not fit the output %s", xs, ys, outShape)
	}
	switch mk.kind {
	case FusedRMSNorm:
		if ys.Size() != h || ys.Dimensions[ys.Rank()-1] != h {
			return nil, fmt.Errorf("weight %s is not [1, …, %d]", ys, h)
		}
	case FusedRoPE:
		r := outShape.Rank()
		if r < 2 || h%2 != 0 || ys.Rank() != r || ys.Dimensions[r-2] != 1 || ys.Dimensions[r-1] != h ||
			!slices.Equal(ys.Dimensions[:r-2], outShape.Dimensions[:r-2]) {
			return nil, fmt.Errorf("table %s does not fit x %s", ys, outShape)
		}
	default:
		if !ys.Equal(outShape) {
			return nil, fmt.Errorf("operands %s, %s differ", xs, ys)
		}
	}
	if mk.kind == FusedRoPE || mk.kind == FusedRMSNorm {
		// The table or weight is read after the output row is written
		// (it has the output's shape when heads or rows are 1): never
		// reuse its buffer.
		owned = []bool{owned[0], false}
	}
	out, o, ok := binaryOutput(b, outShape, xs, ys, x, y, inputs, owned)
	if !ok {
		return nil, errors.New("no output buffer")
	}
	switch mk.kind {
	case FusedSwiGLU, FusedSiLUGrad:
		parallelFor(len(o), 3*len(o), 64, func(lo, hi int) {
			if mk.kind == FusedSwiGLU {
				swiglu(o[lo:hi], x[lo:hi], y[lo:hi])
			} else {
				siluGrad(o[lo:hi], x[lo:hi], y[lo:hi])
			}
		})
	case FusedRoPE:
		heads := outShape.Dimensions[outShape.Rank()-2]
		parallelFor(rows, 3*len(o), 1, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				t := r / heads
				ropeRow(o[r*h:(r+1)*h], x[r*h:(r+1)*h], y[t*h:(t+1)*h], mk.p.Inverse)
			}
		})
	default: // the RMSNorm kinds
		parallelFor(rows, 3*len(o), 1, func(lo, hi int) {
			t := make([]float32, h)
			for r := lo; r < hi; r++ {
				xr, or := x[r*h:(r+1)*h], o[r*h:(r+1)*h]
				if mk.kind == FusedRMSNorm {
					rmsNormRow(or, xr, y, mk.p.Eps)
				} else {
					rmsGradRow(mk.kind, or, xr, y[r*h:(r+1)*h], t, mk.p.Eps)
				}
			}
		})
	}
	return out, nil
}

// block is the length of the stack scratch of the SwiGLU loops.
const block = 256

// swiglu sets o = (g·σ(g))·u; o may be g or u.
func swiglu(o, g, u []float32) {
	var s [block]float32
	for i := 0; i < len(o); i += block {
		n := min(block, len(o)-i)
		t := s[:n]
		vec32.Logistic(t, g[i:i+n])
		vec32.Binary(vec32.Mul, t, g[i:i+n], t)
		vec32.Binary(vec32.Mul, o[i:i+n], t, u[i:i+n])
	}
}

// siluGrad sets o = a·(σ(g)·(1 + g·(1−σ(g)))); o may be a or g.
func siluGrad(o, a, g []float32) {
	var s, t [block]float32
	for i := 0; i < len(o); i += block {
		n := min(block, len(o)-i)
		sn, tn := s[:n], t[:n]
		vec32.Logistic(sn, g[i:i+n])
		vec32.ScalarBinary(vec32.Sub, tn, 1, sn)
		vec32.Binary(vec32.Mul, tn, g[i:i+n], tn)
		vec32.BinaryScalar(vec32.Add, tn, tn, 1)
		vec32.Binary(vec32.Mul, tn, sn, tn)
		vec32.Binary(vec32.Mul, o[i:i+n], a[i:i+n], tn)
	}
}

// softmaxRows runs the graph's MulScalar, Where(mask, ·, fill),
// ReduceMax, Sub, Exp, ReduceSum and Div over rows of length h; o may be
// x.
func softmaxRows(o []float32, mask []bool, x []float32, h int, scale, fill float32) {
	vec32.BinaryScalar(vec32.Mul, o, x, scale)
	vec32.Where(o, mask, o, []float32{fill})
	for r := 0; r < len(o); r += h {
		row := o[r : r+h]
		vec32.BinaryScalar(vec32.Sub, row, row, maxRun(float32(math.Inf(-1)), row))
	}
	vec32.Exp(o, o)
	for r := 0; r < len(o); r += h {
		row := o[r : r+h]
		var sum float32
		for _, e := range row {
			sum += e
		}
		vec32.BinaryScalar(vec32.Div, row, row, sum)
	}
}

// softmaxGradRows sets o = mask ? p·(v − Σ v·p)·scale : 0 (Σ over each
// row of length h); o may be p or v.
func softmaxGradRows(o []float32, mask []bool, p, v []float32, h int, scale float32) {
	t := make([]float32, h)
	zero := []float32{0}
	for r := 0; r < len(o); r += h {
		pr, vr := p[r:r+h], v[r:r+h]
		d := dot(pr, vr)
		vec32.BinaryScalar(vec32.Sub, t, vr, d)
		vec32.Binary(vec32.Mul, t, pr, t)
		vec32.BinaryScalar(vec32.Mul, t, t, scale)
		vec32.Where(o[r:r+h], mask[r:r+h], t, zero)
	}
}

// dot is Σ a·b in float32 with four partial sums.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float32(a[i] * b[i])
		s1 += float32(a[i+1] * b[i+1])
		s2 += float32(a[i+2] * b[i+2])
		s3 += float32(a[i+3] * b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float32(a[i] * b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// rmsOf is √(mean(x²) + eps) as the graph computes it: Square, ReduceSum
// in index order, MulScalar(1/n), AddScalar(eps), Sqrt.
func rmsOf(x []float32, eps float32) float32 {
	var acc float32
	for _, v := range x {
		acc += float32(v * v)
	}
	ms := acc * float32(1/float64(len(x)))
	return float32(math.Sqrt(float64(ms + eps)))
}

// rmsNormRow sets o = (x / r)·w; o may be x.
func rmsNormRow(o, x, w []float32, eps float32) {
	vec32.BinaryScalar(vec32.Div, o, x, rmsOf(x, eps))
	vec32.Binary(vec32.Mul, o, o, w)
}

// rmsGradRow sets o = (g − x̂·mean(g·x̂))/r (FusedRMSNormGrad) or g·x̂
// (FusedRMSNormScale), with 1/r as a product; t is scratch of the row's
// length; o may be x or g.
func rmsGradRow(k FusedKind, o, x, g, t []float32, eps float32) {
	inv := 1 / rmsOf(x, eps)
	vec32.BinaryScalar(vec32.Mul, t, x, inv) // x̂
	if k == FusedRMSNormScale {
		vec32.Binary(vec32.Mul, o, g, t)
		return
	}
	d := dot(g, t) * float32(1/float64(len(x)))
	vec32.BinaryScalar(vec32.Mul, t, t, d)
	vec32.Binary(vec32.Sub, o, g, t)
	vec32.BinaryScalar(vec32.Mul, o, o, inv)
}

// ropeRow rotates one head's row; cs holds cos then sin of the hd/2
// angles. o may be x.
func ropeRow(o, x, cs []float32, inverse bool) {
	h2 := len(x) / 2
	c, s := cs[:h2], cs[h2:]
	lo, hi := x[:h2], x[h2:]
	olo, ohi := o[:h2], o[h2:]
	if inverse {
		for j := range h2 {
			a, b := lo[j], hi[j]
			olo[j] = float32(a*c[j]) + float32(b*s[j])
			ohi[j] = float32(b*c[j]) - float32(a*s[j])
		}
		return
	}
	for j := range h2 {
		a, b := lo[j], hi[j]
		olo[j] = float32(a*c[j]) + float32(-b*s[j])
		ohi[j] = float32(b*c[j]) + float32(a*s[j])
	}
}
