package model

import (
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// forms.go is the one place that picks between two ways of building the
// same math: the form SimpleGo can run (the pure-Go backend lacks Pad and
// DynamicUpdateSlice, and stock gomlx's Slice gradient needs Pad) and the
// form XLA compiles best. The choice asks the backend's Capabilities, so a
// backend that gains an op gets the native form without a name check.
//
//   - KV-cache write of a decode step: Where(Iota == pos, new, cache) over
//     the whole cache (reads and writes every slot), or
//     DynamicUpdateSlice(cache, new, pos) (writes one slot in place).
//   - RoPE's rotate_half(x) = concat(−x[hd/2:], x[:hd/2]): a product with
//     a fixed ±1 matrix [hd, hd], or Slice + Neg + Concatenate (no extra
//     flops; its gradient is Pad, hence the Pad check).

// graphForms says which native forms a graph uses.
type graphForms struct {
	// dynamicUpdate writes KV caches with DynamicUpdateSlice.
	dynamicUpdate bool
	// sliceRotate builds rotate_half from Slice/Neg/Concatenate.
	sliceRotate bool
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
		sliceRotate:   op[backends.OpTypeSlice] && op[backends.OpTypeConcatenate] && op[backends.OpTypeNeg] && op[backends.OpTypePad],
	}
}

// forms returns the model's graph forms (chosen per backend).
func (m *Model) forms() graphForms { return chooseForms(m.backend.Capabilities()) }

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

// writeCache returns cache [B, S, nkv, hd] with position at (a scalar
// int32) replaced by update [B, 1, nkv, hd]; mask is the bool [B, S, nkv,
// hd] "slot == at" of the Where form (unused by DynamicUpdateSlice).
func writeCache(native bool, cache, update, at, mask *Node) *Node {
	if native {
		zero := ScalarZero(cache.Graph(), dtypes.Int32)
		return DynamicUpdateSlice(cache, update, []*Node{zero, ConvertDType(at, dtypes.Int32), zero, zero})
	}
	return Where(mask, BroadcastToDims(update, cache.Shape().Dimensions...), cache)
}
