package model

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/graph"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// grouped.go: a training forward that runs each group's prompt once.
//
// GRPO trains on G completions of every prompt. The plain forward runs
// each row whole, so a prompt of P tokens is pushed through every layer G
// times (and differentiated G times) although its hidden states are the
// same in every row of the group. For a short answer to a long prompt that
// is almost all of the work. Here the prompts of the B/G groups and the
// rows' completion columns are laid out as one flat list of tokens, so that
// every matrix product, norm and MLP runs once per distinct token; only
// attention tells the parts apart: a prompt attends causally within
// itself, and a completion token attends to its group's prompt keys and
// values (broadcast to the group's rows) followed by its own row's
// completion keys, in the padded row's slot order, with the plain
// forward's mask. The prompt's gradient collects every row's contribution
// through that broadcast. The hidden states are the plain forward's up to
// rounding (the same sums, accumulated in another order where the group's
// rows meet).

// groupLayout is the flat token layout of a grouped forward: prompts
// groups' prompts of promptLen tokens, then rows rows' first compLen
// completion columns; the bool score masks per layer kind (false: full
// attention, true: sliding window) in scoreMask's layout.
type groupLayout struct {
	prompts, size, promptLen, compLen int
	promptMask, compMask              map[bool]*Node
}

// GroupedHiddenGraph is HiddenRangeGraph(ctx, withAdapter, ids, mask,
// positions, promptLen-1, L-1, checkpoint) for rows that come in groups of
// group consecutive rows whose first promptLen columns of ids, mask and
// positions are equal (GRPO's G completions of one prompt, left-padded
// alike): the hidden states [B, L-promptLen, H] that predict each row's
// completion columns, with every group's prompt computed once. ids, mask
// and positions are [B, L]. The caller guarantees the groups' equality;
// rows that break it get another row's prompt. Graph building: panics on
// error, including a B that group does not divide.
func (m *Model) GroupedHiddenGraph(ctx *mlctx.Context, withAdapter bool, ids, mask, positions *graph.Node, promptLen, group int, checkpoint bool) *graph.Node {
	B, L := ids.Shape().Dim(0), ids.Shape().Dim(1)
	P := promptLen
	if group < 1 || B%group != 0 {
		panic(fmt.Sprintf("model: GroupedHiddenGraph: %d rows are not groups of %d", B, group))
	}
	if P < 1 || P >= L {
		panic(fmt.Sprintf("model: GroupedHiddenGraph: prompt length %d outside 1..%d", P, L-1))
	}
	Pn, C := B/group, L-P-1             // the last column predicts nothing that is trained
	promptCols := func(x *Node) *Node { // the first row's prompt of each group: [Pn, P]
		return Reshape(Slice(Reshape(x, Pn, group, L), AxisRange(), AxisElem(0), AxisRange(0, P)), Pn, P)
	}
	flat := func(x *Node) *Node { // [1, Pn·P + B·C]
		parts := []*Node{Reshape(promptCols(x), 1, Pn*P)}
		if C > 0 {
			parts = append(parts, Reshape(Slice(x, AxisRange(), AxisRange(P, P+C)), 1, B*C))
		}
		return Concatenate(parts, 1)
	}
	f := m.fwd(ctx, withAdapter)
	f.checkpoint = checkpoint
	gl := &groupLayout{prompts: Pn, size: group, promptLen: P, compLen: C,
		promptMask: map[bool]*Node{}, compMask: map[bool]*Node{}}
	pm := f.causalMask(promptCols(mask))
	gl.promptMask[false], gl.promptMask[true] = f.scoreMask(pm.full), maybeScoreMask(f, pm.local)
	if C > 0 {
		cm := f.causalMaskFrom(Slice(mask, AxisRange(), AxisRange(0, P+C)), P)
		gl.compMask[false], gl.compMask[true] = f.scoreMask(cm.full), maybeScoreMask(f, cm.local)
	}
	f.group = gl
	h, _ := f.decoder(flat(ids), flat(positions), masks{}, nil, writes{})

	H := h.Shape().Dim(-1)
	last := Slice(Reshape(Slice(h, AxisRange(), AxisRange(0, Pn*P)), Pn, P, H), AxisRange(), AxisRange(P-1, P))
	out := Reshape(BroadcastToDims(Reshape(last, Pn, 1, 1, H), Pn, group, 1, H), B, 1, H)
	if C == 0 {
		return out
	}
	comp := Reshape(Slice(h, AxisRange(), AxisRange(Pn*P, Pn*P+B*C)), B, C, H)
	return Concatenate([]*Node{out, comp}, 1)
}

// maybeScoreMask is scoreMask of m, or nil for no mask (no sliding layers).
func maybeScoreMask(f *fwd, m *Node) *Node {
	if m == nil {
		return nil
	}
	return f.scoreMask(m)
}

// groupedAttention is attention's core over the flat layout f.group: q
// [1, N, nh, hd] and k, v [1, N, nkv, hd] after RoPE; it returns the
// attention output [1, N, nh·hd].
func (f *fwd) groupedAttention(i int, q, k, v *Node) *Node {
	gl := f.group
	local := f.m.cfg.IsSlidingLayer(i)
	nh, nkv, hd := f.m.cfg.NumAttentionHeads, f.m.cfg.NumKeyValueHeads, f.m.cfg.HeadDim
	Pn, G, P, C := gl.prompts, gl.size, gl.promptLen, gl.compLen
	B, np := Pn*G, Pn*gl.promptLen
	part := func(x *Node, from, rows, cols, heads int) *Node {
		return Reshape(Slice(x, AxisRange(), AxisRange(from, from+rows*cols)), rows, cols, heads, hd)
	}
	kp, vp := part(k, 0, Pn, P, nkv), part(v, 0, Pn, P, nkv)
	out := Reshape(f.attend(part(q, 0, Pn, P, nh), kp, vp, gl.promptMask[local]), 1, np, nh*hd)
	if C == 0 {
		return out
	}
	// Each row's keys: its group's prompt, then its own completion columns.
	perRow := func(x *Node) *Node {
		return Reshape(BroadcastToDims(Reshape(x, Pn, 1, P, nkv, hd), Pn, G, P, nkv, hd), B, P, nkv, hd)
	}
	ks := Concatenate([]*Node{perRow(kp), part(k, np, B, C, nkv)}, 1)
	vs := Concatenate([]*Node{perRow(vp), part(v, np, B, C, nkv)}, 1)
	comp := f.attend(part(q, np, B, C, nh), ks, vs, gl.compMask[local])
	return Concatenate([]*Node{out, Reshape(comp, 1, B*C, nh*hd)}, 1)
}
