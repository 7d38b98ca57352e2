package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/internal/fused"
	"github.com/grpokit/grpokit/internal/vjp"
)

// maskedScore replaces masked attention scores. It is finite so that a
// left-pad query row, whose keys are all masked, attends uniformly and stays
// finite (as HF's eager attention with finfo.min), never NaN.
const maskedScore = -1e30

// fwd carries what one graph build needs.
type fwd struct {
	m       *Model
	forms   graphForms // SimpleGo workarounds or native forms (forms.go)
	ctx     *mlctx.Context
	adapter Adapter // nil: base model only
	// checkpoint recomputes each decoder layer in the backward pass
	// (vjp.Checkpoint) instead of keeping its activations; plain forward only.
	checkpoint bool
	// group, when set, is the flat layout of a grouped forward (grouped.go).
	group *groupLayout
}

// weight returns the graph node of HF tensor name (tied fallback applied).
// It panics when the weight does not exist in ctx.
func (f *fwd) weight(g *Graph, name string) *Node {
	for n := name; ; {
		scope, v, err := ScopeOf(n)
		if err != nil {
			panic(err)
		}
		if x := storedWeight(f.ctx, g, scope, v, f.m.specShape(n)); x != nil {
			return x
		}
		alt, ok := tiedFallback[n]
		if !ok {
			panic(fmt.Errorf("model: weight %q is not in the context", name))
		}
		n = alt
	}
}

// linear applies HF module (weight [out, in], optional bias) to x [..., in]
// and adds the adapter's term: y = x·Wᵀ (+b) (+Δ). One DotGeneral.
func (f *fwd) linear(module string, x *Node, bias bool) *Node {
	var y *Node
	switch {
	case bias && f.m.Compute() != dtypes.Float32:
		// torch's addmm adds the bias to the float32 accumulator and
		// rounds once: the product and the sum in float32 (bf16 values
		// widen exactly), then one cast.
		g := x.Graph()
		w := f.heldAs(g, module+".weight", f.m.Compute())
		if w == nil {
			w = f.cast(f.weight(g, module+".weight"))
		}
		y = DotGeneral(toF32(x), []int{x.Rank() - 1}, nil, toF32(w), []int{1}, nil)
		b := f.cast(lastAxis(f.weight(g, module+".bias"), y.Rank()))
		y = f.cast(Add(y, toF32(b)))
	case bias:
		y = f.productWT(x, module+".weight")
		y = Add(y, f.cast(lastAxis(f.weight(x.Graph(), module+".bias"), y.Rank())))
	default:
		y = f.productWT(x, module+".weight")
	}
	if f.adapter != nil {
		if d := f.adapter.Delta(f.ctx, module, x); d != nil {
			y = addDelta(y, d)
		}
	}
	return y
}

// rmsNorm is w · x / sqrt(mean(x²) + eps) over the last axis, or Gemma's
// (1 + w) · x / sqrt(mean(x²) + eps). As HF, the statistics are float32
// whatever x's dtype; Llama casts x̂ back before multiplying by w, Gemma
// multiplies by 1 + w in float32 and casts the product. Div by Sqrt rather
// than Rsqrt because Rsqrt has no gradient in gomlx v0.26.0.
func (f *fwd) rmsNorm(name string, x *Node) *Node {
	dt := x.DType()
	if dt == dtypes.Float32 && f.forms.fused {
		// One pass, the same float32 values (internal/fused).
		w := toF32(f.weight(x.Graph(), name))
		if f.m.cfg.arch().norm == normOnePlusW {
			w = OnePlus(w)
		}
		return fused.RMSNorm(x, lastAxis(w, x.Rank()), f.m.cfg.RMSNormEps)
	}
	x = toF32(x)
	ms := ReduceAndKeep(Square(x), ReduceMean, -1)
	x = Div(x, Sqrt(AddScalar(ms, f.m.cfg.RMSNormEps)))
	w := lastAxis(f.weight(x.Graph(), name), x.Rank())
	if f.m.cfg.arch().norm == normOnePlusW {
		return ConvertDType(Mul(x, OnePlus(toF32(w))), dt)
	}
	return Mul(ConvertDType(x, dt), ConvertDType(w, dt))
}

// lastAxis reshapes a vector [n] to [1, ..., 1, n] of the given rank, for
// broadcasting (gomlx needs equal ranks).
func lastAxis(v *Node, rank int) *Node {
	dims := make([]int, rank)
	for i := range dims {
		dims[i] = 1
	}
	dims[rank-1] = v.Shape().Dimensions[0]
	return Reshape(v, dims...)
}

// rope holds cos and sin tables [B, T, 1, hd] and the rotate-half matrix
// (nil when rotate_half is built from slices: forms.go), or, for the
// fused form (internal/fused), only cs [B, T, 1, hd]: cos then sin of the
// hd/2 distinct angles.
type rope struct{ cos, sin, rot, cs *Node }

// newRope builds RoPE tables with inverse frequencies inv (HeadDim/2) for
// positions [B, T] (any integer dtype). Angles follow HF's "rotate_half"
// layout: frequency j and j+hd/2 are equal.
func (f *fwd) newRope(positions *Node, inv []float64) rope {
	g := positions.Graph()
	hd := f.m.cfg.HeadDim
	freq := make([]float32, hd)
	for j, v := range inv {
		freq[j], freq[j+hd/2] = float32(v), float32(v)
	}
	pos := ExpandAxes(ConvertDType(positions, dtypes.Float32), -1) // [B, T, 1]
	if f.m.Compute() == dtypes.Float32 && f.forms.fused {
		half := ExpandAxes(Mul(pos, Reshape(Const(g, freq[:hd/2]), 1, 1, hd/2)), 2) // [B, T, 1, hd/2]
		return rope{cs: Concatenate([]*Node{Cos(half), Sin(half)}, -1)}
	}
	angle := Mul(pos, Reshape(Const(g, freq), 1, 1, hd)) // [B, T, hd]
	angle = ExpandAxes(angle, 2)                         // [B, T, 1, hd]
	cos, sin := f.cast(Cos(angle)), f.cast(Sin(angle))
	if f.forms.sliceRotate {
		return rope{cos: cos, sin: sin}
	}
	// rotate_half(x) = concat(-x[hd/2:], x[:hd/2]) as x·R with a fixed ±1 matrix:
	// Slice/Concatenate gradients need Pad, which SimpleGo lacks.
	r := make([][]float32, hd)
	for i := range r {
		r[i] = make([]float32, hd)
	}
	for j := range hd / 2 {
		r[j+hd/2][j] = -1
		r[j][j+hd/2] = 1
	}
	// HF computes the tables in float32 and casts them to the activations'
	// dtype; ±1 is exact in any dtype.
	return rope{cos: cos, sin: sin, rot: f.cast(Const(g, r))}
}

// apply rotates x [B, T, heads, hd].
func (r rope) apply(x *Node) *Node {
	if r.cs != nil {
		return fused.RoPE(x, r.cs)
	}
	rot := rotateHalf(x, r.rot)
	return Add(Mul(x, r.cos), Mul(rot, r.sin))
}

// kvState is one layer's keys and values [B, S, nkv, hd]. With a shared
// prompt cache (prefixcache.go), pk and pv are the prompts' keys and
// values [P, Tp, nkv, hd], shared by the B/P rows of each prompt, and k
// and v hold only the generated tokens' (v with carry slots first).
type kvState struct{ k, v, pk, pv *Node }

// cacheWrite is where a decode step writes its keys: the scalar slot and,
// for the Where form, the mask of that slot.
type cacheWrite struct{ at, mask *Node }

// attention runs self-attention of layer i on h [B, T, H]. mask is the bool
// [B, nkv, T, rep, S] mask of the keys each query may see (see scoreMask).
// With cache == nil the keys are this call's own (S = T); otherwise the new
// k/v (T must be 1) are written into the cache at slot w.at (a scalar;
// w.mask is the bool [B, S, nkv, hd] "slot == at" of the Where form), and
// attention runs over the whole cache. It
// returns the output [B, T, H] and the keys/values attended over (the
// updated cache).
func (f *fwd) attention(i int, h *Node, r rope, mask *Node, cache *kvState, w cacheWrite) (*Node, kvState) {
	cfg := f.m.cfg
	a := cfg.arch()
	B, T := h.Shape().Dimensions[0], h.Shape().Dimensions[1]
	nh, nkv, hd := cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim
	name := func(p string) string { return layerName(i, "self_attn."+p) }
	q := Reshape(f.linear(name("q_proj"), h, cfg.qkvBias()), B, T, nh, hd)
	k := Reshape(f.linear(name("k_proj"), h, cfg.qkvBias()), B, T, nkv, hd)
	v := Reshape(f.linear(name("v_proj"), h, cfg.qkvBias()), B, T, nkv, hd)
	if a.qkNorm {
		// Per head over head_dim, before RoPE (Qwen3, Gemma 3).
		q = f.rmsNorm(name("q_norm.weight"), q)
		k = f.rmsNorm(name("k_norm.weight"), k)
	}
	q, k = r.apply(q), r.apply(k)
	if cache != nil && cache.pk != nil {
		out, kv := f.prefixAttention(q, k, v, mask, cache, w)
		return f.linear(name("o_proj"), out, cfg.oBias()), kv
	}
	if f.group != nil {
		return f.linear(name("o_proj"), f.groupedAttention(i, q, k, v), cfg.oBias()), kvState{}
	}
	kv := kvState{k: k, v: v}
	if cache != nil {
		kv.k = writeCache(f.forms, cache.k, k, w)
		kv.v = writeCache(f.forms, cache.v, v, w)
	}
	return f.linear(name("o_proj"), f.attend(q, kv.k, kv.v, mask), cfg.oBias()), kv
}

// attend is attention's core: queries q [B, T, nh, hd] over keys and values
// k, v [B, S, nkv, hd] with mask [B, nkv, T, rep, S] (see scoreMask); it
// returns [B, T, nh·hd].
func (f *fwd) attend(q, k, v, mask *Node) *Node {
	B, T := q.Shape().Dim(0), q.Shape().Dim(1)
	nh, nkv, hd := f.m.cfg.NumAttentionHeads, f.m.cfg.NumKeyValueHeads, f.m.cfg.HeadDim
	rep := nh / nkv
	// Query head n uses kv head n/rep: split heads as [kv group, rep].
	q5 := Reshape(q, B, T, nkv, rep, hd)
	scores := DotGeneral(q5, []int{4}, []int{0, 2}, k, []int{3}, []int{0, 2}) // [B, G, T, R, S]
	probs := f.attnProbs(scores, mask)
	out := DotGeneral(probs, []int{4}, []int{0, 1}, v, []int{1}, []int{0, 2}) // [B, G, T, R, hd]
	return Reshape(TransposeAllAxes(out, 0, 2, 1, 3, 4), B, T, nh*hd)
}

// attnProbs turns raw scores q·k into attention weights: scaled, masked
// (mask false: maskedScore) and a float32 softmax over the last axis, as HF.
func (f *fwd) attnProbs(scores, mask *Node) *Node {
	cfg := f.m.cfg
	scale := 1 / sqrtF(cfg.HeadDim)
	if a := cfg.arch(); a.attnScale != nil {
		scale = a.attnScale(cfg)
	}
	if scores.DType() == dtypes.Float32 && f.forms.fused {
		return fused.AttentionSoftmax(scores, mask, scale, maskedScore)
	}
	if dt := scores.DType(); dt == dtypes.Float32 {
		scores = MulScalar(scores, scale)
	} else {
		// torch multiplies a bf16 tensor by a Python float in float32
		// and rounds once (the scale itself is not rounded to bf16).
		scores = ConvertDType(MulScalar(toF32(scores), scale), dt)
	}
	scores = Where(mask, scores, scalarLike(scores, maskedScore))
	return ConvertDType(Softmax(toF32(scores), -1), scores.DType())
}

// scalarLike returns a scalar of x's dtype; a bfloat16 one is rounded to
// nearest even, as torch's .to(torch.bfloat16) (gomlx's constants
// truncate).
func scalarLike(x *Node, v float64) *Node {
	if x.DType() == dtypes.BFloat16 {
		return Const(x.Graph(), backend.RoundBF16(float32(v)))
	}
	return ConstAsDType(x.Graph(), x.DType(), v)
}

func sqrtF(n int) float64 {
	x := float64(n)
	z := x
	for range 60 {
		z = (z + x/z) / 2
	}
	return z
}

// scoreMask broadcasts the bool [B, T, S] mask of visible keys to the
// attention scores' layout [B, nkv, T, rep, S], once for all layers.
func (f *fwd) scoreMask(allowed *Node) *Node {
	d := allowed.Shape().Dimensions
	B, T, S := d[0], d[1], d[2]
	nkv := f.m.cfg.NumKeyValueHeads
	rep := f.m.cfg.NumAttentionHeads / nkv
	return BroadcastToDims(Reshape(allowed, B, 1, T, 1, S), B, nkv, T, rep, S)
}

// mlp is down(act(gate(h)) · up(h)): SwiGLU, or GeGLU with the tanh GELU.
func (f *fwd) mlp(i int, h *Node) *Node {
	gate := f.linear(layerName(i, "mlp.gate_proj"), h, false)
	up := f.linear(layerName(i, "mlp.up_proj"), h, false)
	if gate.DType() == dtypes.Float32 && f.m.cfg.arch().act != actGELUTanh && f.forms.fused {
		return f.linear(layerName(i, "mlp.down_proj"), fused.SwiGLU(gate, up), false)
	}
	// The activation is computed in float32 and rounded once, as torch's
	// bf16 kernels do (no-op casts in float32).
	g32 := toF32(gate)
	var act *Node
	switch f.m.cfg.arch().act {
	case actGELUTanh:
		act = geluTanh(g32)
	default:
		act = Mul(g32, Sigmoid(g32))
	}
	act = ConvertDType(act, gate.DType())
	return f.linear(layerName(i, "mlp.down_proj"), Mul(act, up), false)
}

// geluTanh is 0.5·z·(1 + tanh(sqrt(2/π)·(z + 0.044715·z³))), PyTorch's
// gelu(approximate="tanh") (HF's gelu_pytorch_tanh).
func geluTanh(z *Node) *Node {
	inner := MulScalar(Add(z, MulScalar(Mul(Square(z), z), 0.044715)), math.Sqrt(2/math.Pi))
	return Mul(MulScalar(z, 0.5), OnePlus(Tanh(inner)))
}

// masks are the bool visibility masks [B, T, S] of the full-attention
// layers and, when the model has sliding-window layers, of those (their S
// is the local cache's length while decoding).
type masks struct{ full, local *Node }

// writes are the scalar cache indices a decode step writes its keys to, in
// the full caches and in the sliding layers' ring-buffer caches.
type writes struct{ full, local *Node }

// decoder runs embedding and all layers on ids [B, T]; see attention for
// the masks, caches and write indices (caches nil for a plain forward). It
// returns hidden states [B, T, H] after the final norm, and each layer's
// keys/values.
func (f *fwd) decoder(ids, positions *Node, allowed masks, caches []kvState, at writes) (*Node, []kvState) {
	cfg := f.m.cfg
	a := cfg.arch()
	g := ids.Graph()
	x := f.cast(lookupRows(f.ctx, g, "model.embed_tokens.weight", ids, f.m.specShape("model.embed_tokens.weight"))) // [B, T, H]
	if a.embedScale {
		// HF multiplies by sqrt(hidden) cast to the weights' dtype.
		x = Mul(x, scalarLike(x, float64(float32(math.Sqrt(float64(cfg.HiddenSize))))))
	}
	ropes := map[bool]rope{}
	scoreMasks := map[bool]*Node{}
	writeAt := map[bool]cacheWrite{}
	kvs := make([]kvState, cfg.NumHiddenLayers)
	for i := range cfg.NumHiddenLayers {
		local := cfg.IsSlidingLayer(i)
		if _, ok := ropes[local]; !ok {
			ropes[local] = f.newRope(positions, cfg.LayerInvFreq(i))
			m := allowed.full
			if local {
				m = allowed.local
			}
			if f.group == nil { // a grouped forward keeps its own masks
				scoreMasks[local] = f.scoreMask(m)
			}
		}
		var c *kvState
		if caches != nil {
			c = &caches[i]
			if _, ok := writeAt[local]; !ok {
				// The cache index to write, as a mask shared by the layers of a kind.
				w := at.full
				if local {
					w = at.local
				}
				cw := cacheWrite{at: w}
				// A ring buffer shorter than the full caches reuses its
				// slots: the scatter form needs a never-written one.
				fresh := !local || c.k.Shape().Dim(1) == allowed.full.Shape().Dim(2)
				if !f.forms.dynamicUpdate && !(f.forms.scatterWrite && fresh) {
					dims := c.k.Shape().Dimensions
					cw.mask = Equal(Iota(g, shapes.Make(dtypes.Int32, dims...), 1), w)
				}
				writeAt[local] = cw
			}
		}
		layer := func(x *Node) *Node {
			var out *Node
			out, kvs[i] = f.layer(i, x, ropes[local], scoreMasks[local], c, writeAt[local])
			return out
		}
		if f.checkpoint && caches == nil {
			x = vjp.Checkpoint(layer, x)
		} else {
			x = layer(x)
		}
	}
	return f.rmsNorm("model.norm.weight", x), kvs
}

// layer runs decoder layer i on x [B, T, H] (see attention for the other
// arguments) and returns its output and keys/values.
func (f *fwd) layer(i int, x *Node, r rope, mask *Node, c *kvState, w cacheWrite) (*Node, kvState) {
	h := f.rmsNorm(layerName(i, "input_layernorm.weight"), x)
	att, kv := f.attention(i, h, r, mask, c, w)
	if f.m.cfg.arch().sandwich {
		x = Add(x, f.rmsNorm(layerName(i, "post_attention_layernorm.weight"), att))
		h = f.rmsNorm(layerName(i, "pre_feedforward_layernorm.weight"), x)
		return Add(x, f.rmsNorm(layerName(i, "post_feedforward_layernorm.weight"), f.mlp(i, h))), kv
	}
	x = Add(x, att)
	h = f.rmsNorm(layerName(i, "post_attention_layernorm.weight"), x)
	return Add(x, f.mlp(i, h)), kv
}

// lmHead maps hidden states [..., H] to float32 logits [..., V] (a bf16
// product is upcast, as HF's logits.float()).
func (f *fwd) lmHead(h *Node) *Node {
	if f.m.decoderOnly {
		panic(errors.New("model: loaded without an LM head (Options.DecoderOnly): it has no logits"))
	}
	return toF32(f.productWT(h, "lm_head.weight"))
}

// productWT is x·Wᵀ for HF weight name [out, in] (tied fallback applied).
// A low-precision weight under float32 compute on the "go" backend is
// never widened whole: the product decodes it (lowpWeight).
func (f *fwd) productWT(x *Node, name string) *Node {
	g := x.Graph()
	if fuseLowp && f.m.Compute() == dtypes.Float32 && backend.FusedLowp(g.Backend()) {
		for n := name; ; {
			scope, v, err := ScopeOf(n)
			if err != nil {
				panic(err)
			}
			if w, found := lowpWeight(f.ctx, g, scope, v); found {
				if w != nil {
					return productLowp(x, w)
				}
				break
			}
			alt, ok := tiedFallback[n]
			if !ok {
				break
			}
			n = alt
		}
	}
	if dt := f.m.Compute(); dt != dtypes.Float32 {
		// A weight held in the compute dtype (a bf16 checkpoint under bf16
		// compute) enters the product as it is: widening it to float32 and
		// casting it back gave the same values through a float32 copy of
		// every matrix (671 MB for Gemma 3's tied 262k-row lm_head).
		if w := f.heldAs(g, name, dt); w != nil {
			return DotGeneral(x, []int{x.Rank() - 1}, nil, w, []int{1}, nil)
		}
	}
	w := f.cast(f.weight(g, name))
	return DotGeneral(x, []int{x.Rank() - 1}, nil, w, []int{1}, nil)
}

// heldAs returns the variable node of HF weight name (tied fallback
// applied) when it is held in dtype dt, else nil.
func (f *fwd) heldAs(g *Graph, name string, dt dtypes.DType) *Node {
	for n := name; ; {
		scope, v, err := ScopeOf(n)
		if err != nil {
			return nil
		}
		if x := f.ctx.InAbsPath(scope).GetVariable(v); x != nil {
			if node := x.ValueGraph(g); node.DType() == dt {
				return node
			}
			return nil
		}
		alt, ok := tiedFallback[n]
		if !ok {
			return nil
		}
		n = alt
	}
}

// causalMask returns the bool [B, T, T] masks: query t sees key s when
// s <= t and mask[b, s] is set (mask: [B, T], nonzero = real token); in
// sliding-window layers also t - s < sliding_window (HF's
// sliding_window_overlay: a query sees the window's keys, itself included;
// t and s index the padded sequence, as HF's cache positions).
func (f *fwd) causalMask(mask *Node) masks { return f.causalMaskFrom(mask, 0) }

// causalMaskFrom is causalMask's rows from..S-1 only (the queries of the
// positions from on, keys all S): [B, S-from, S].
func (f *fwd) causalMaskFrom(mask *Node, from int) masks {
	g := mask.Graph()
	B, S := mask.Shape().Dimensions[0], mask.Shape().Dimensions[1]
	T := S - from
	qi := Iota(g, shapes.Make(dtypes.Int32, B, T, S), 1)
	if from > 0 {
		qi = AddScalar(qi, float64(from))
	}
	ki := Iota(g, shapes.Make(dtypes.Int32, B, T, S), 2)
	real := NotEqual(mask, ScalarZero(g, mask.DType()))
	full := LogicalAnd(LessOrEqual(ki, qi), BroadcastToDims(ExpandAxes(real, 1), B, T, S))
	out := masks{full: full}
	if f.m.hasSlidingLayers() {
		w := Const(g, int32(f.m.cfg.SlidingWindow))
		out.local = LogicalAnd(full, LessThan(Sub(qi, ki), w))
	}
	return out
}

// hasSlidingLayers reports whether any layer is a sliding-window layer.
func (m *Model) hasSlidingLayers() bool {
	for i := range m.cfg.NumHiddenLayers {
		if m.cfg.IsSlidingLayer(i) {
			return true
		}
	}
	return false
}

func (m *Model) fwd(ctx *mlctx.Context, withAdapter bool) *fwd {
	f := &fwd{m: m, ctx: ctx, forms: m.forms()}
	if withAdapter {
		f.adapter = m.adapter
	}
	return f
}

// LogitsGraph builds the forward pass with the attached adapter (if any):
// ids, mask and positions are [B, T] integers (mask nonzero for real
// tokens, left padding allowed; positions as HF computes them, or 0..T-1 per
// row — RoPE is relative); the result is logits [B, T, V] in float32.
// Logits at pad positions are finite garbage. ctx must be m.Context() or
// derived from it. Graph building: panics on error.
func (m *Model) LogitsGraph(ctx *mlctx.Context, ids, mask, positions *graph.Node) *graph.Node {
	return m.logits(ctx, true, ids, mask, positions)
}

// BaseLogitsGraph is LogitsGraph without the adapter: the base model, which
// GRPO uses as its reference model. Graph building: panics on error.
func (m *Model) BaseLogitsGraph(ctx *mlctx.Context, ids, mask, positions *graph.Node) *graph.Node {
	return m.logits(ctx, false, ids, mask, positions)
}

// LogitsRangeGraph is LogitsGraph restricted to the positions start..end-1
// of each row: logits [B, end-start, V]. The LM head, often the largest
// product of the model, then runs only where the caller needs logits (GRPO
// needs the completion positions). withAdapter false gives the base model.
// Graph building: panics on error, including 0 <= start < end <= T.
func (m *Model) LogitsRangeGraph(ctx *mlctx.Context, withAdapter bool, ids, mask, positions *graph.Node, start, end int) *graph.Node {
	return m.HeadGraph(ctx, m.HiddenRangeGraph(ctx, withAdapter, ids, mask, positions, start, end, false))
}

// HiddenRangeGraph is LogitsRangeGraph without the LM head: the hidden
// states after the final norm at positions start..end-1, [B, end-start, H]
// in the compute dtype, which HeadGraph maps to the logits. With
// checkpoint set, the gradient recomputes each decoder layer in the
// backward pass rather than keeping its activations (HF's
// gradient_checkpointing): only each layer's input is kept. Graph building:
// panics on error, including 0 <= start < end <= T.
func (m *Model) HiddenRangeGraph(ctx *mlctx.Context, withAdapter bool, ids, mask, positions *graph.Node, start, end int, checkpoint bool) *graph.Node {
	if t := ids.Shape().Dim(1); start < 0 || start >= end || end > t {
		panic(fmt.Sprintf("model: HiddenRangeGraph: range [%d, %d) outside the %d positions", start, end, t))
	}
	f := m.fwd(ctx, withAdapter)
	f.checkpoint = checkpoint
	h, _ := f.decoder(ids, positions, f.causalMask(mask), nil, writes{})
	if start > 0 || end < h.Shape().Dim(1) {
		h = Slice(h, AxisRange(), AxisRange(start, end))
	}
	return h
}

// HeadGraph maps hidden states [..., H] (from HiddenRangeGraph) to float32
// logits [..., V] with the LM head (tied to the embeddings where the config
// says so). Graph building: panics on error.
func (m *Model) HeadGraph(ctx *mlctx.Context, hidden *graph.Node) *graph.Node {
	return m.fwd(ctx, false).lmHead(hidden)
}

func (m *Model) logits(ctx *mlctx.Context, withAdapter bool, ids, mask, positions *Node) *Node {
	return m.LogitsRangeGraph(ctx, withAdapter, ids, mask, positions, 0, ids.Shape().Dim(1))
}

// TokenLogProbs turns logits [B, T, V] into the log-probabilities of the
// integer targets [B, T] (any integer dtype) and the entropy of each
// predictive distribution, after dividing the logits by temperature (0 or
// 1: unchanged), as TRL's selective_log_softmax and entropy_from_logits
// do: logp and entropy are [B, T] float32. It is the one log-prob builder
// of the repository: evaluation (Model.TokenLogProbs), the GRPO and SFT
// losses (through grpo.PolicyLogProbs) and the benchmarks use it. A
// one-hot mask stands in for a gather, so its gradient is a plain
// product, which every backend has. Graph building: panics on error.
func TokenLogProbs(logits, targets *graph.Node, temperature float64) (logp, entropy *graph.Node) {
	if logits.DType() != dtypes.Float32 {
		logits = ConvertDType(logits, dtypes.Float32)
	}
	if temperature != 0 && temperature != 1 {
		logits = DivScalar(logits, temperature)
	}
	vocab := logits.Shape().Dim(-1)
	logProbs := LogSoftmax(logits, -1)
	oneHot := OneHot(targets, vocab, dtypes.Float32)
	logp = ReduceSum(Mul(logProbs, oneHot), -1)
	entropy = Neg(ReduceSum(Mul(Exp(logProbs), logProbs), -1))
	return logp, entropy
}
