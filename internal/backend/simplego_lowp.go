package backend

// Products with frozen low-precision weights (bfloat16, NF4, int8) on
// SimpleGo, without a float32 copy of the weight: the model builds the
// weight's float32 node as a "carrier" op whose inputs are the stored
// tensors, and marks it (MarkLowp). The carrier's executor does not
// dequantize: it returns a proxy buffer that points at the stored tensors,
// and the DotGeneral hook hands the proxy to internal/gemm as a Mat with a
// gemm.Lowp, which decodes the values while packing its panels (or into a
// small scratch on the decode path). The decoded values are the float32
// numbers the separate dequantization would have made, so the products are
// unchanged.
//
// The carriers (their stock semantics are never used: a marked node always
// runs here):
//
//   - bfloat16: ConvertDType(w [out, in] bf16 → f32), which is also exactly
//     its stock meaning;
//   - int8: Gather(scale [out] f32, q [out, in, 1] int8) → [out, in];
//   - NF4: Gather(absmax [blocks/2, 2] f32, packed [out, in/2, 1] uint8) →
//     [out, in/2, 2], the weight with its input axis split in two (the
//     caller reshapes x to match);
//   - ggml blocks (a GGUF file's Q4_0, Q4_1, Q8_0 or Q4_K): Gather(one f32
//     [1, …, 1, values] of rank bytes+1, blocks [out, nb, bytes] uint8
//     with the bytes as the index vector) → [out, nb, values], the weight
//     with its input axis split into blocks (the caller reshapes x).
//
// A marked node's only consumers must be DotGenerals (the model builds
// them so); the proxy is not a float32 buffer, and any other op reading it
// would fail. A DotGeneral that the gemm hook cannot run on the proxy
// (unusual axes) gets a dequantized copy instead.

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/grpokit/grpokit/internal/gemm"
	"github.com/grpokit/grpokit/internal/quant"
)

// lowpMark replaces the data of a marked carrier node.
type lowpMark struct {
	format gemm.Format
	ggml   quant.GGML // format GGML: the block type
}

// lowpProxy is the flat "data" of a carrier's output buffer.
type lowpProxy struct {
	q    *gemm.Lowp
	dims []int // the float32 tensor's dimensions
}

var (
	lowpOnce     sync.Once
	lowpErr      error
	lowpReady    bool // the offsets below are known and the hooks are in place
	stockGather  nodeExecutor
	outputOpsOff uintptr // graph.Node.outputOps
	bufShapeOff  uintptr // simplego.Buffer.shape
	bufValidOff  uintptr // simplego.Buffer.valid
	bufFlatOff   uintptr // simplego.Buffer.flat
)

// installLowp checks the fields it needs and hooks Gather (ConvertDType is
// already hooked: convertBF16). Called by installGemm.
func installLowp() {
	lowpOnce.Do(func() {
		field := func(t reflect.Type, name string, want reflect.Type) uintptr {
			f, ok := t.FieldByName(name)
			if !ok || f.Type != want {
				lowpErr = errors.Join(lowpErr, fmt.Errorf("backend: low-precision products off: %v has no %s %v", t, name, want))
			}
			return f.Offset
		}
		outputOpsOff = field(reflect.TypeFor[graph.Node](), "outputOps", reflect.TypeFor[[]backends.Op]())
		bt := reflect.TypeFor[simplego.Buffer]()
		bufShapeOff = field(bt, "shape", reflect.TypeFor[shapes.Shape]())
		bufValidOff = field(bt, "valid", reflect.TypeFor[bool]())
		bufFlatOff = field(bt, "flat", reflect.TypeFor[any]())
		stockGather = nodeExecutors[backends.OpTypeGather]
		if stockGather == nil || stockConvert == nil || nodeExecutors[backends.OpTypeConvertDType] == nil {
			lowpErr = errors.Join(lowpErr, errors.New("backend: low-precision products off: no Gather/ConvertDType executor"))
		}
		if lowpErr != nil {
			return
		}
		nodeExecutors[backends.OpTypeGather] = gatherLowp
		lowpReady = true
	})
}

// FusedLowp reports whether products with the low-precision weight
// carriers of MarkLowp run fused on b: b is the "go" backend and every hook
// is in place. When it is false, build the plain dequantization instead.
func FusedLowp(b backends.Backend) bool {
	if _, ok := b.(*simplego.Backend); !ok || FastDotGeneral() != nil {
		return false
	}
	return lowpReady
}

// LowpProducts returns how many DotGenerals have run with a low-precision
// weight's proxy on gemm since the process started (for tests).
func LowpProducts() int64 { return lowpCalls.Load() }

// MarkLowp marks carrier n (see the file comment) of a weight in format f
// ("bf16", "nf4", "int8", or a ggml block type: "Q4_0", "Q4_1", "Q8_0",
// "Q4_K"); FusedLowp(n's backend) must be true. It
// panics (graph building) on a carrier of the wrong form.
func MarkLowp(n *graph.Node, f string) {
	var mk lowpMark
	var wantType backends.OpType
	switch f {
	case "bf16":
		mk.format, wantType = gemm.BF16, backends.OpTypeConvertDType
	case "nf4":
		mk.format, wantType = gemm.NF4, backends.OpTypeGather
	case "int8":
		mk.format, wantType = gemm.Int8, backends.OpTypeGather
	default:
		t, ok := quant.ParseGGML(f)
		if !ok {
			panic(fmt.Sprintf("backend: MarkLowp: unknown format %q", f))
		}
		mk.format, mk.ggml, wantType = gemm.GGML, t, backends.OpTypeGather
	}
	ops := *(*[]backends.Op)(unsafe.Add(unsafe.Pointer(n), outputOpsOff))
	if len(ops) != 1 {
		panic(fmt.Sprintf("backend: MarkLowp: node %s has %d backend ops", n, len(ops)))
	}
	sn, ok := ops[0].(*simplego.Node)
	if !ok {
		panic(fmt.Sprintf("backend: MarkLowp: node %s is not a SimpleGo node", n))
	}
	if t := reflect.ValueOf(sn).Elem().FieldByName("opType").Int(); backends.OpType(t) != wantType {
		panic(fmt.Sprintf("backend: MarkLowp: %s carrier must be a %v, got %v", f, wantType, backends.OpType(t)))
	}
	*(*any)(unsafe.Add(unsafe.Pointer(sn), nodeDataOff)) = &mk
}

// markOf returns the mark of a carrier node, or nil.
func markOf(node *simplego.Node) *lowpMark {
	mk, _ := (*(*any)(unsafe.Add(unsafe.Pointer(node), nodeDataOff))).(*lowpMark)
	return mk
}

// gatherLowp runs marked Gathers (int8 and NF4 carriers); every other
// Gather goes to SimpleGo.
func gatherLowp(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
	if mk := markOf(node); mk != nil {
		return carrier(b, mk, inputs, owned)
	}
	return stockGather(b, node, inputs, owned)
}

// carrier returns the proxy of a marked node's weight.
func carrier(b *simplego.Backend, mk *lowpMark, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
	flat := func(i int) any { return *(*any)(unsafe.Add(unsafe.Pointer(inputs[i]), bufFlatOff)) }
	shape := func(i int) shapes.Shape { return *(*shapes.Shape)(unsafe.Add(unsafe.Pointer(inputs[i]), bufShapeOff)) }
	var p lowpProxy
	switch mk.format {
	case gemm.BF16:
		w, ok := flat(0).([]bfloat16.BFloat16)
		if !ok {
			return nil, errors.New("backend: bf16 weight carrier: input is not bfloat16")
		}
		p.dims = shape(0).Dimensions
		p.q = &gemm.Lowp{Format: gemm.BF16, Len: len(w), BF16: unsafe.Slice((*uint16)(unsafe.SliceData(w)), len(w))}
	case gemm.Int8:
		scale, ok1 := flat(0).([]float32)
		q, ok2 := flat(1).([]int8)
		d := shape(1).Dimensions
		if !ok1 || !ok2 || len(d) != 3 {
			return nil, errors.New("backend: int8 weight carrier: want (scale f32, q [out, in, 1] int8)")
		}
		p.dims = []int{d[0], d[1]}
		p.q = &gemm.Lowp{Format: gemm.Int8, Len: len(q), Cols: d[1], Int8: q, Scale: scale}
	case gemm.NF4:
		absmax, ok1 := flat(0).([]float32)
		packed, ok2 := flat(1).([]uint8)
		d := shape(1).Dimensions
		if !ok1 || !ok2 || len(d) != 3 {
			return nil, errors.New("backend: nf4 weight carrier: want (absmax f32, packed [out, in/2, 1] uint8)")
		}
		p.dims = []int{d[0], d[1], 2}
		p.q = &gemm.Lowp{Format: gemm.NF4, Len: 2 * len(packed), Packed: packed, Absmax: absmax}
	case gemm.GGML:
		blocks, ok := flat(1).([]uint8)
		d := shape(1).Dimensions
		vals, size := mk.ggml.Block()
		if !ok || len(d) != 3 || d[2] != size {
			return nil, fmt.Errorf("backend: %v weight carrier: want blocks [out, nb, %d] uint8", mk.ggml, size)
		}
		p.dims = []int{d[0], d[1], vals}
		p.q = &gemm.Lowp{Format: gemm.GGML, Len: d[0] * d[1] * vals, Type: mk.ggml, Blocks: blocks}
	}
	if err := p.q.Validate(); err != nil {
		return nil, fmt.Errorf("backend: weight carrier: %w", err)
	}
	// The proxy keeps the inputs' data: an input that this node would
	// free (its last use) is taken over instead (SimpleGo's protocol: a nil
	// input is not recycled).
	for i := range inputs {
		if owned[i] {
			inputs[i] = nil
		}
	}
	return newProxy(&p), nil
}

// newProxy wraps p in a SimpleGo buffer. Its shape is an empty complex128
// vector: valid for SimpleGo's bookkeeping, and never the shape of a real
// buffer that something could take from the pool if one ever got there.
func newProxy(p *lowpProxy) *simplego.Buffer {
	buf := new(simplego.Buffer)
	base := unsafe.Pointer(buf)
	*(*shapes.Shape)(unsafe.Add(base, bufShapeOff)) = shapes.Make(dtypes.Complex128, 0)
	*(*bool)(unsafe.Add(base, bufValidOff)) = true
	*(*any)(unsafe.Add(base, bufFlatOff)) = p
	return buf
}

// proxyOf returns the proxy in buf, or nil.
func proxyOf(buf *simplego.Buffer) *lowpProxy {
	if buf == nil || !lowpReady {
		return nil
	}
	p, _ := (*(*any)(unsafe.Add(unsafe.Pointer(buf), bufFlatOff))).(*lowpProxy)
	return p
}

// dequantized returns a float32 buffer with p's values (the fallback for a
// DotGeneral the fused path cannot run).
func dequantized(b *simplego.Backend, p *lowpProxy) *simplego.Buffer {
	out := newBuffer(b, shapes.Make(dtypes.Float32, p.dims...))
	flat, _ := b.BufferData(out)
	p.q.Decode(flat.([]float32), 0)
	return out
}
