package model

import (
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/grpokit/grpokit/internal/fused"
)

// forms.go is the one place that picks between two ways of building the
// same math: the form SimpleGo can run (the pure-Go backend lacks Pad and
// DynamicUpdateSlice, and stock gomlx's Slice gradient needs Pad) and the
// form XLA compiles best. The choice asks the backend's Capabilities, so a
// backend that gains an op gets the native form without a name check.
//
//   - KV-cache write of a decode step: DynamicUpdateSlice(cache, new, pos)
//     (writes one slot in place); where the backend lacks it (SimpleGo), a
//     ScatterSum of new into the slot, which holds zeros until written, so
//     adding is writing, in place when the cache is donated (Generate
//     donates it); or Where(Iota == pos, new, cache) over the whole cache
//     (reads and writes every slot) for a ring-buffer slot that is reused.
//   - RoPE's rotate_half(x) = concat(−x[hd/2:], x[:hd/2]): a product with
//     a fixed ±1 matrix [hd, hd], or Slice + Neg + Concatenate (no extra
//     flops; its gradient is Pad, hence the Pad check).

// graphForms says which native forms a graph uses.
type graphForms struct {
	// dynamicUpdate writes KV caches with DynamicUpdateSlice.
	dynamicUpdate bool
	// scatterWrite writes a never-written KV slot with ScatterSum (when
	// not dynamicUpdate).
	scatterWrite bool
	// sliceRotate builds rotate_half from Slice/Neg/Concatenate.
	sliceRotate bool
	// fused builds float32 RMSNorm, RoPE, the attention softmax and SwiGLU
	// as one node each (internal/fused; the "go" backend), before the
	// forms above.
	fused bool
}

// formsOverride, when set (tests), replaces the backend's choice.
var formsOverride *graphForms

// chooseForms returns the forms for a backend with capabilities caps.
func chooseForms(caps backends.Capabilities) graphForms {
	if formsOverride != nil {
		return *formsOverride
	}
	op := caps.Operations
	return graphForms{
		dynamicUpdate: op[backends.OpTypeDynamicUpdateSlice],
		scatterWrite:  !op[backends.OpTypeDynamicUpdateSlice] && op[backends.OpTypeScatterSum],
		sliceRotate:   op[backends.OpTypeSlice] && op[backends.OpTypeConcatenate] && op[backends.OpTypeNeg] && op[backends.OpTypePad],
	}
}

// forms returns the model's graph forms (chosen per backend).
func (m *Model) forms() graphForms {
	f := chooseForms(m.backend.Capabilities())
	if formsOverride == nil {
		f.fused = fused.Available(m.backend)
	}
	return f
}

// rotateHalf returns concat(−x[..., hd/2:], x[..., :hd/2]) for x [..., hd],
// in the form the backend runs best; rot is the ±1 matrix of the product
// form (nil when sliceRotate).
func rotateHalf(x, rot *Node) *Node {
	if rot == nil {
		hd := x.Shape().Dim(-1)
		last := x.Rank() - 1
		lo := SliceAxis(x, last, AxisRange(0, hd/2))
		hi := SliceAxis(x, last, AxisRange(hd/2, hd))
		return Concatenate([]*Node{Neg(hi), lo}, last)
	}
	return DotGeneral(x, []int{x.Rank() - 1}, nil, rot, []int{0}, nil)
}

// writeCache returns cache [B, S, nkv, hd] with slot w.at (a scalar
// int32) replaced by update [B, 1, nkv, hd]: by DynamicUpdateSlice, by
// Where with w.mask, the bool [B, S, nkv, hd] "slot == at", when the
// decoder made one, else by ScatterSum into a slot that still holds
// zeros (0 + x = x exactly; only −0 becomes +0).
func writeCache(fm graphForms, cache, update *Node, w cacheWrite) *Node {
	switch {
	case fm.dynamicUpdate:
		zero := ScalarZero(cache.Graph(), dtypes.Int32)
		return DynamicUpdateSlice(cache, update, []*Node{zero, ConvertDType(w.at, dtypes.Int32), zero, zero})
	case w.mask != nil:
		return Where(w.mask, BroadcastToDims(update, cache.Shape().Dimensions...), cache)
	}
	// As rows of a [B·S, nkv·hd] matrix, the slot of batch row b is row
	// b·S + at: the leading-axis scatter every backend runs (SimpleGo's
	// ScatterSum mishandles windows that span axes before the indexed
	// one). Reshapes of an owned buffer are free in SimpleGo.
	d := cache.Shape().Dimensions
	B, S, row := d[0], d[1], d[2]*d[3]
	rows := Add(MulScalar(Iota(cache.Graph(), shapes.Make(dtypes.Int32, B, 1), 0), float64(S)), ConvertDType(w.at, dtypes.Int32))
	flat := ScatterSum(Reshape(cache, B*S, row), rows, Reshape(update, B, row), true, true)
	return Reshape(flat, d...)
}
