package model

import (
	"fmt"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// prefixcache.go: a prompt's KV cache shared by its group while decoding.
//
// GRPO samples G completions of each prompt. Copying the prompt's keys and
// values into G per-row caches made every decode step read them G times
// (at batch 32 with SmolLM2's shape, 377 MB per step: more than the
// weights). Instead each full-attention layer keeps the prompts' keys and
// values once, [P, Tp, nkv, hd], and per row only the generated tokens'
// ("suffix") keys [N, Sx, nkv, hd] and values [N, rep+Sx, nkv, hd], where
// Sx grows by buckets with the completion (suffixSlots), so that a step
// reads only about as many suffix slots as there are tokens.
//
// The result is the same, bit for bit, as attention over a per-row cache of
// Tp+Sx slots on the go backend: scores of the prompt and of the suffix are
// concatenated in the per-row slot order before the softmax, and the
// weighted sum of values must add the same terms in the same order. The
// backend's product sums each output over the contracted axis in one pass
// from zero (up to gemm's K block, sharedMaxContext), so the prompt part
// c = Σ_prompt p·v is computed once for the group and then carried into the
// suffix product as rep extra value slots in front of the suffix (slot r
// holds query head r's c, weighted 1 for head r and 0 for the others): the
// suffix product's running sum starts from c exactly, as the per-row sum
// did after the prompt slots. The carry slots are written and cleared again
// (x + (−x) = +0) by in-place ScatterSums around the product. Slots not yet
// written weigh exactly 0 and add nothing, so a shorter suffix changes no
// sum (the backend's row sums and maxima run in order).
// TestScatterWriteMatchesWhere holds all this to the per-row caches.

// sharedMaxContext is the longest per-row context (Tp+Sx slots) that uses
// the shared prompt cache: up to it, the go backend's products (gemm's K
// block, internal/gemm's kcMax) sum a whole row in one pass, which the
// carry needs to reproduce the per-row cache's result exactly.
const sharedMaxContext = 640

// noSharedPrompt, for tests, turns the shared prompt caches off.
var noSharedPrompt bool

// sharesPrompt reports whether Generate decodes with shared prompt caches
// for per-row contexts of S slots: on the go backend (in-place ScatterSum
// writes), in float32 (a bfloat16 product rounds its result, so the carry
// would round twice), and for models with full-attention layers.
func (m *Model) sharesPrompt(S int) bool {
	fm := m.forms()
	if noSharedPrompt || !fm.scatterWrite || fm.dynamicUpdate || m.Compute() != dtypes.Float32 || S > sharedMaxContext {
		return false
	}
	for i := range m.cfg.NumHiddenLayers {
		if !m.cfg.IsSlidingLayer(i) {
			return true
		}
	}
	return false
}

// prefixAttention is attention's decode step over a shared prompt cache
// (cache.pk, cache.pv [P, Tp, nkv, hd]) and the rows' suffix caches
// (cache.k [B, Sx, nkv, hd], cache.v [B, rep+Sx, nkv, hd]): q [B, 1, nh,
// hd] and the new k, v [B, 1, nkv, hd], written to suffix slot w.at; mask
// [B, nkv, 1, rep, Tp+Sx] as scoreMask gives (prompt slots first). It
// returns the attention output [B, 1, nh·hd] and the updated caches.
func (f *fwd) prefixAttention(q, k, v, mask *Node, cache *kvState, w cacheWrite) (*Node, kvState) {
	cfg := f.m.cfg
	g := q.Graph()
	B := q.Shape().Dim(0)
	nh, nkv, hd := cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim
	rep := nh / nkv
	P, Tp := cache.pk.Shape().Dim(0), cache.pk.Shape().Dim(1)
	G := B / P
	Sx := cache.k.Shape().Dim(1)
	ks := writeCache(f.forms, cache.k, k, w)
	vs := writeCache(f.forms, cache.v, v, cacheWrite{at: AddScalar(w.at, float64(rep))})

	// Scores, [B, nkv, 1, rep, Tp+Sx]: the prompt's for each prompt's G rows
	// at once, then the suffix's.
	// Operands transposed so that each product's rows are contiguous: the
	// backend would otherwise copy them into fresh (page-faulting) memory.
	qp := TransposeAllAxes(Reshape(q, P, G, nkv, rep, hd), 0, 2, 1, 3, 4)        // [P, nkv, G, rep, hd]
	sp := DotGeneral(qp, []int{4}, []int{0, 1}, cache.pk, []int{3}, []int{0, 2}) // [P, nkv, G, rep, Tp]
	sp = Reshape(TransposeAllAxes(sp, 0, 2, 1, 3, 4), B, nkv, 1, rep, Tp)
	q5 := Reshape(q, B, 1, nkv, rep, hd)
	ss := DotGeneral(q5, []int{4}, []int{0, 2}, ks, []int{3}, []int{0, 2}) // [B, nkv, 1, rep, Sx]
	probs := f.attnProbs(Concatenate([]*Node{sp, ss}, 4), mask)

	// The prompt part of the weighted sum, per query head: carry [B·rep, nkv·hd].
	pp := Reshape(Slice(probs, AxisRange(), AxisRange(), AxisRange(), AxisRange(), AxisRange(0, Tp)), P, G, nkv, rep, Tp)
	pp = TransposeAllAxes(pp, 0, 2, 1, 3, 4)                                    // [P, nkv, G, rep, Tp]
	c := DotGeneral(pp, []int{4}, []int{0, 1}, cache.pv, []int{1}, []int{0, 2}) // [P, nkv, G, rep, hd]
	carry := Reshape(TransposeAllAxes(c, 0, 2, 3, 1, 4), B*rep, nkv*hd)         // [P, G, rep, nkv, hd]
	S1 := rep + Sx
	rows := Reshape(Add(
		MulScalar(Iota(g, shapes.Make(dtypes.Int32, B, rep), 0), float64(S1)),
		Iota(g, shapes.Make(dtypes.Int32, B, rep), 1)), B*rep, 1)
	// The 4-D view is withCarry's only user and the 2-D view for the clear
	// below its last: SimpleGo hands a buffer over in place to its last
	// user only, so both reshapes are free. (A Reshape of the ScatterSum
	// beside the clearing ScatterSum copied the whole value cache, 3.2 MB
	// per layer and step at batch 32 with 128 suffix slots.)
	withCarry := Reshape(ScatterSum(Reshape(vs, B*S1, nkv*hd), rows, carry, true, true), B, S1, nkv, hd)

	// Suffix part, its sum starting from the carry: weights [one-hot of the
	// head's carry slot, suffix probabilities].
	eye := make([][]float32, rep)
	for r := range eye {
		eye[r] = make([]float32, rep)
		eye[r][r] = 1
	}
	one := BroadcastToDims(Reshape(ConstAsDType(g, probs.DType(), eye), 1, 1, 1, rep, rep), B, nkv, 1, rep, rep)
	px := Concatenate([]*Node{one, Slice(probs, AxisRange(), AxisRange(), AxisRange(), AxisRange(), AxisRange(Tp, Tp+Sx))}, 4)
	out := DotGeneral(px, []int{4}, []int{0, 1}, withCarry, []int{1}, []int{0, 2}) // [B, nkv, 1, rep, hd]
	// Built after the product, so it runs after it and in place.
	cleared := ScatterSum(Reshape(withCarry, B*S1, nkv*hd), rows, Neg(carry), true, true)
	out = Reshape(TransposeAllAxes(out, 0, 2, 1, 3, 4), B, 1, nh*hd)
	return out, kvState{k: ks, v: Reshape(cleared, B, S1, nkv, hd), pk: cache.pk, pv: cache.pv}
}

// suffixSlots is the number of suffix slots a decode step attends over
// when the suffix may grow to max slots: step's slot included, rounded up
// to a bucket (16, 32, 64, …), so that early steps do not read (or
// compile for) the whole suffix. Generate grows the caches (growSuffix)
// when the step crosses a bucket.
func suffixSlots(step, max int) int { return min(max, bucket(step+1)) }

// growSuffix appends by zero slots to the suffix caches among caches (two
// per layer; the full-attention layers' when shared) and finalizes the old
// ones. The new slots hold zeros, as the in-place writes need.
func (m *Model) growSuffix(caches []*tensors.Tensor, shared bool, by int) ([]*tensors.Tensor, error) {
	var idx []int
	var in []any
	for i := range m.cfg.NumHiddenLayers {
		if shared && !m.cfg.IsSlidingLayer(i) {
			idx = append(idx, 2*i, 2*i+1)
			in = append(in, caches[2*i], caches[2*i+1])
		}
	}
	e, err := m.exec("grow-suffix", func(ctx *mlctx.Context, in []*Node) []*Node {
		by := in[0].Shape().Dim(0)
		var out []*Node
		for _, c := range in[1:] {
			d := slices.Clone(c.Shape().Dimensions)
			d[1] = by
			out = append(out, Concatenate([]*Node{c, Zeros(c.Graph(), shapes.Make(c.DType(), d...))}, 1))
		}
		return out
	})
	if err != nil {
		return nil, err
	}
	res, err := e.Exec(append([]any{tensors.FromShape(shapes.Make(dtypes.Int8, by))}, in...)...)
	if err != nil {
		return nil, fmt.Errorf("model: generate: growing the suffix caches: %w", err)
	}
	out := slices.Clone(caches)
	for j, i := range idx {
		caches[i].FinalizeAll()
		out[i] = res[j]
	}
	return out, nil
}
