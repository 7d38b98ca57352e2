package backend

// This file is the one place where grpokit reaches inside GoMLX's SimpleGo
// backend (gomlx v0.26.0, pinned in go.mod): it replaces the executor of
// f32 DotGeneral nodes with internal/gemm, which is 10–30× faster. The rest
// of grpokit does not know about it.
//
// How: SimpleGo keeps one executor per op type in the unexported array
// nodeExecutors. A pull-style //go:linkname of that variable works with Go
// 1.26 without any linker flag (the linker's -checklinkname rule only
// guards the standard library). installGemm swaps the DotGeneral entry for
// dotGeneralGemm and keeps the original, which still runs every dtype
// other than float32 and anything the hook does not recognise.
//
// Failing safe: if the pinned gomlx ever lost the nodeExecutors symbol the
// build would fail at link time (loudly, never silently wrong). Everything
// else is checked at run time with reflect: the Node's "data" field and the
// DotGeneral parameters' field names and types. On any mismatch the hook
// steps aside and the stock executor runs, and FastDotGeneral says why.
// GRPOKIT_GEMM=off leaves SimpleGo untouched.

import (
	"errors"
	"fmt"
	"math/bits"
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

	"github.com/grpokit/grpokit/internal/gemm"
)

type nodeExecutor func(b *simplego.Backend, n *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error)

//go:linkname nodeExecutors github.com/gomlx/gomlx/backends/simplego.nodeExecutors
var nodeExecutors [backends.OpTypeLast]nodeExecutor

var (
	installOnce sync.Once
	stockDot    nodeExecutor
	hookErr     atomic.Pointer[error] // nil while the hook is in place
	nodeDataOff uintptr               // offset of simplego.Node.data
	paramsOnce  sync.Once
	paramsOff   dotParamsLayout
	fastCalls   atomic.Int64 // DotGenerals run by gemm, for tests
	lowpCalls   atomic.Int64 // of them, with a low-precision weight
)

// FastDotGeneral reports whether float32 DotGenerals of the "go" backend
// run on grpokit's internal/gemm (nil) or on SimpleGo's own code (the
// error says why). It is meaningful once a "go" backend has been made.
func FastDotGeneral() error {
	if p := hookErr.Load(); p != nil {
		return *p
	}
	if stockDot == nil {
		return errors.New("backend: gemm hook not installed yet (no go backend made)")
	}
	return nil
}

func disableHook(err error) { hookErr.Store(&err) }

// installGemm puts dotGeneralGemm in place; New calls it when it makes a
// "go" backend.
func installGemm() {
	installOnce.Do(func() {
		if strings.EqualFold(os.Getenv(gemm.EnvVar), "off") {
			disableHook(fmt.Errorf("backend: gemm hook disabled by %s=off", gemm.EnvVar))
			return
		}
		f, ok := reflect.TypeFor[simplego.Node]().FieldByName("data")
		if !ok || f.Type != reflect.TypeFor[any]() {
			disableHook(errors.New("backend: gemm hook off: simplego.Node has no `data any` field"))
			return
		}
		nodeDataOff = f.Offset
		stockDot = nodeExecutors[backends.OpTypeDotGeneral]
		if stockDot == nil {
			disableHook(errors.New("backend: gemm hook off: SimpleGo has no DotGeneral executor"))
			return
		}
		nodeExecutors[backends.OpTypeDotGeneral] = dotGeneralGemm
		installBF16() // round-to-nearest-even bf16; see simplego_bf16.go
		installLowp() // low-precision weight carriers; see simplego_lowp.go
	})
}

// dotParamsLayout holds the offsets of the fields of SimpleGo's
// dotGeneralNodeData that the hook reads.
type dotParamsLayout struct {
	ok                                           bool
	lhsContract, lhsBatch, rhsContract, rhsBatch uintptr
	batch, lhsCross, rhsCross, contract          uintptr
}

// learnParams checks the dynamic type of a DotGeneral node's data once.
func learnParams(data any) error {
	var err error
	paramsOnce.Do(func() {
		t := reflect.TypeOf(data)
		if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			err = fmt.Errorf("backend: gemm hook off: DotGeneral node data is %v", t)
			return
		}
		t = t.Elem()
		field := func(name string, want reflect.Type) uintptr {
			f, ok := t.FieldByName(name)
			if !ok || f.Type != want {
				err = errors.Join(err, fmt.Errorf("backend: gemm hook off: %v.%s is not a %v", t, name, want))
			}
			return f.Offset
		}
		ints, one := reflect.TypeFor[[]int](), reflect.TypeFor[int]()
		paramsOff = dotParamsLayout{
			ok:          true,
			lhsContract: field("lhsContractingAxes", ints),
			lhsBatch:    field("lhsBatchAxes", ints),
			rhsContract: field("rhsContractingAxes", ints),
			rhsBatch:    field("rhsBatchAxes", ints),
			batch:       field("batchSize", one),
			lhsCross:    field("lhsCrossSize", one),
			rhsCross:    field("rhsCrossSize", one),
			contract:    field("contractingSize", one),
		}
		paramsOff.ok = err == nil
	})
	if err == nil && !paramsOff.ok {
		err = errors.New("backend: gemm hook off: unexpected DotGeneral parameters")
	}
	return err
}

// dotGeneralGemm is the replacement executor: float32 goes to gemm.Gemm, a
// low-precision weight's proxy to gemm.Gemm with a gemm.Lowp (dotLowp),
// everything else to SimpleGo's own executor. (A bfloat16 DotGeneral
// arrives here widened to float32: simplego_bf16.go.)
func dotGeneralGemm(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
	if len(inputs) != 2 {
		return stockDot(b, node, inputs, owned)
	}
	if pl, pr := proxyOf(inputs[0]), proxyOf(inputs[1]); pl != nil || pr != nil {
		return dotLowp(b, node, inputs, owned, [2]*lowpProxy{pl, pr})
	}
	if hookErr.Load() != nil {
		return stockDot(b, node, inputs, owned)
	}
	lhsShape, err1 := b.BufferShape(inputs[0])
	rhsShape, err2 := b.BufferShape(inputs[1])
	dt := lhsShape.DType
	if err1 != nil || err2 != nil || rhsShape.DType != dt || dt != dtypes.Float32 {
		return stockDot(b, node, inputs, owned)
	}
	p, err := paramsOf(node)
	if err != nil {
		return stockDot(b, node, inputs, owned)
	}
	lhsFlat, _ := b.BufferData(inputs[0])
	rhsFlat, _ := b.BufferData(inputs[1])
	lhsData, ok1 := lhsFlat.([]float32)
	rhsData, ok2 := rhsFlat.([]float32)
	if !ok1 || !ok2 {
		return stockDot(b, node, inputs, owned)
	}
	a := operand(lhsData, lhsShape.Dimensions, p.axes.lhsBatch, p.axes.lhsContract, true)
	bm := operand(rhsData, rhsShape.Dimensions, p.axes.rhsBatch, p.axes.rhsContract, false)
	out := newBuffer(b, shapes.Make(dtypes.Float32, p.batch, p.m, p.n))
	outFlat, _ := b.BufferData(out)
	gemm.Gemm(p.batch, p.m, p.n, p.k, a, bm, outFlat.([]float32))
	recycleOperand(a, lhsData)
	recycleOperand(bm, rhsData)
	fastCalls.Add(1)
	return out, nil
}

// dotParams are a DotGeneral node's sizes and axes.
type dotParams struct {
	batch, m, n, k int
	axes           dotGeneralAxes
}

// paramsOf reads node's DotGeneral parameters (turning the hook off if they
// are not what it expects).
func paramsOf(node *simplego.Node) (dotParams, error) {
	data := *(*any)(unsafe.Add(unsafe.Pointer(node), nodeDataOff))
	if err := learnParams(data); err != nil {
		disableHook(err)
		return dotParams{}, err
	}
	p := reflect.ValueOf(data).UnsafePointer()
	ints := func(off uintptr) []int { return *(*[]int)(unsafe.Add(p, off)) }
	size := func(off uintptr) int { return *(*int)(unsafe.Add(p, off)) }
	return dotParams{
		batch: size(paramsOff.batch), m: size(paramsOff.lhsCross), n: size(paramsOff.rhsCross), k: size(paramsOff.contract),
		axes: dotGeneralAxes{ints(paramsOff.lhsBatch), ints(paramsOff.lhsContract), ints(paramsOff.rhsBatch), ints(paramsOff.rhsContract)},
	}, nil
}

// dotLowp runs a DotGeneral with a low-precision weight's proxy on gemm,
// decoding the weight while it packs it. When it cannot (the hook is off,
// axes that need a copy, a float32 partner that is not), the proxy is
// dequantized into a float32 buffer and the product runs as usual.
func dotLowp(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool, px [2]*lowpProxy) (*simplego.Buffer, error) {
	// The proxies hold no pooled memory: at their last use, drop them
	// rather than let SimpleGo recycle them.
	defer func() {
		for i, p := range px {
			if p != nil && owned[i] {
				inputs[i] = nil
			}
		}
	}()
	if hookErr.Load() == nil {
		if p, err := paramsOf(node); err == nil {
			var mats [2]gemm.Mat
			ok := true
			for i, side := range [2]struct {
				batch, contract []int
			}{{p.axes.lhsBatch, p.axes.lhsContract}, {p.axes.rhsBatch, p.axes.rhsContract}} {
				if px[i] != nil {
					m, fits := layout(px[i].dims, side.batch, side.contract, i == 0)
					m.Q = px[i].q
					mats[i], ok = m, ok && fits
					continue
				}
				shape, err1 := b.BufferShape(inputs[i])
				flat, err2 := b.BufferData(inputs[i])
				data, isF32 := flat.([]float32)
				if err1 != nil || err2 != nil || !isF32 || shape.DType != dtypes.Float32 {
					ok = false
					continue
				}
				mats[i] = operand(data, shape.Dimensions, side.batch, side.contract, i == 0)
			}
			if ok {
				out := newBuffer(b, shapes.Make(dtypes.Float32, p.batch, p.m, p.n))
				outFlat, _ := b.BufferData(out)
				gemm.Gemm(p.batch, p.m, p.n, p.k, mats[0], mats[1], outFlat.([]float32))
				fastCalls.Add(1)
				lowpCalls.Add(1)
				return out, nil
			}
		}
	}
	in := []*simplego.Buffer{inputs[0], inputs[1]}
	var tmp []*simplego.Buffer
	for i, p := range px {
		if p != nil {
			in[i] = dequantized(b, p)
			tmp = append(tmp, in[i])
		}
	}
	out, err := dotGeneralGemm(b, node, in, []bool{false, false})
	for _, t := range tmp {
		_ = b.BufferFinalize(t)
	}
	return out, err
}

// operand describes one DotGeneral input as a gemm.Mat: for the left side
// rows are its cross axes and columns its contracting axes; for the right
// side rows are contracting and columns cross. Each group of axes becomes
// one stride when its axes are laid out contiguously in the group's order
// (the usual case). Batch axes that are not get a list of offsets; cross
// or contracting axes that are not (rare) make the operand be copied into
// [batch, cross, contracting] order first.
func operand(data []float32, dims, batchAxes, contractAxes []int, lhs bool) gemm.Mat {
	m, ok := layout(dims, batchAxes, contractAxes, lhs)
	if ok {
		m.Data = data
		return m
	}
	cross := crossOf(len(dims), batchAxes, contractAxes)
	strides := rowMajor(dims)
	data = normalize(data, dims, strides, batchAxes, cross, contractAxes)
	xn, kn := groupSize(dims, cross), groupSize(dims, contractAxes)
	if lhs {
		return gemm.Mat{Data: data, BS: xn * kn, RS: kn, CS: 1}
	}
	return gemm.Mat{Data: data, BS: xn * kn, RS: 1, CS: kn}
}

// layout is operand without the data; ok is false when the operand needs
// the copy.
func layout(dims, batchAxes, contractAxes []int, lhs bool) (m gemm.Mat, ok bool) {
	strides := rowMajor(dims)
	cross := crossOf(len(dims), batchAxes, contractAxes)
	bs, okB := groupStride(dims, strides, batchAxes)
	xs, okX := groupStride(dims, strides, cross)
	ks, okK := groupStride(dims, strides, contractAxes)
	if !okX || !okK {
		return gemm.Mat{}, false
	}
	var batchOffs []int
	if !okB {
		// E.g. [B, T, H, hd] with batch axes B and H: one offset per matrix.
		batchOffs = offsets(dims, strides, batchAxes)
	}
	if lhs {
		return gemm.Mat{BS: bs, RS: xs, CS: ks, Batch: batchOffs}, true
	}
	return gemm.Mat{BS: bs, RS: ks, CS: xs, Batch: batchOffs}, true
}

// rowMajor returns the strides of a dense row-major array of dims.
func rowMajor(dims []int) []int {
	strides := make([]int, len(dims))
	for s, ax := 1, len(dims)-1; ax >= 0; ax-- {
		strides[ax] = s
		s *= dims[ax]
	}
	return strides
}

// crossOf lists the axes that are neither batch nor contracting.
func crossOf(rank int, batchAxes, contractAxes []int) []int {
	kind := make([]byte, rank)
	for _, ax := range batchAxes {
		kind[ax] = 'b'
	}
	for _, ax := range contractAxes {
		kind[ax] = 'k'
	}
	var cross []int
	for ax := range rank {
		if kind[ax] == 0 {
			cross = append(cross, ax)
		}
	}
	return cross
}

// groupStride returns the single stride that walks the flattened index of
// axes (in their given order), if there is one. Axes of size 1 never matter.
func groupStride(dims, strides, axes []int) (stride int, ok bool) {
	last := -1
	for _, ax := range axes {
		if dims[ax] == 1 {
			continue
		}
		if last >= 0 && strides[last] != strides[ax]*dims[ax] {
			return 0, false
		}
		last = ax
	}
	if last < 0 {
		return 0, true
	}
	return strides[last], true
}

func groupSize(dims, axes []int) int {
	n := 1
	for _, ax := range axes {
		n *= dims[ax]
	}
	return n
}

// offsets lists the flat offset of every index of the group, in the
// group's row-major order.
func offsets(dims, strides, axes []int) []int {
	offs := []int{0}
	for _, ax := range axes {
		next := make([]int, 0, len(offs)*dims[ax])
		for _, o := range offs {
			for i := range dims[ax] {
				next = append(next, o+i*strides[ax])
			}
		}
		offs = next
	}
	return offs
}

// normBufs recycles normalize's copies by power-of-two capacity: a fresh
// slice for each attention product (3 MB at the GRPO step's shape, 240 a
// step) came back from the heap as fresh pages, so its copy paid the page
// faults. A sync.Pool lets GC drop them when idle.
var normBufs [48]sync.Pool // *[]float32 of capacity 1<<i

// normBuf returns a slice of length n from normBufs (contents undefined).
func normBuf(n int) []float32 {
	i := bits.Len(uint(max(n, 1) - 1))
	if p, _ := normBufs[i].Get().(*[]float32); p != nil {
		return (*p)[:n]
	}
	return make([]float32, n, 1<<i)
}

// recycleOperand gives m's data back to normBufs when operand copied it
// (it is not the input's data); m must not be used after.
func recycleOperand(m gemm.Mat, input []float32) {
	d := m.Data
	if cap(d) == 0 || len(input) > 0 && &d[:1][0] == &input[0] || cap(d)&(cap(d)-1) != 0 {
		return
	}
	d = d[:0]
	normBufs[bits.Len(uint(cap(d)-1))].Put(&d)
}

// normalize copies data into a dense [batch, cross, contracting] layout:
// one output row per (batch, cross) index, copied as a block when the
// contracting axes are contiguous in data (the usual case: attention's
// [B, T, kv, rep, hd] queries), else gathered; rows are split across
// goroutines.
func normalize(data []float32, dims, strides, batchAxes, cross, contract []int) []float32 {
	ob, ox, ok := offsets(dims, strides, batchAxes), offsets(dims, strides, cross), offsets(dims, strides, contract)
	kn := len(ok)
	out := normBuf(len(ob) * len(ox) * kn)
	ks, dense := groupStride(dims, strides, contract)
	dense = dense && (ks == 1 || kn == 1)
	rows := len(ob) * len(ox)
	parallelFor(rows, 2*len(out), 1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			base, dst := ob[r/len(ox)]+ox[r%len(ox)], out[r*kn:(r+1)*kn]
			if dense {
				copy(dst, data[base:base+kn])
				continue
			}
			for i, k := range ok {
				dst[i] = data[base+k]
			}
		}
	})
	return out
}

// dotGeneralAxes are a DotGeneral's batch and contracting axes.
type dotGeneralAxes struct{ lhsBatch, lhsContract, rhsBatch, rhsContract []int }
