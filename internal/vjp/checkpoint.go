package vjp

import (
	"fmt"
	"runtime"
	"sync"
	"weak"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// region is one Checkpoint call: what the backward pass needs to build f
// again and where it leaves the gradients of the region's inputs.
type region struct {
	f      func(x *Node) *Node
	x      *Node
	params []*Node // the float Parameter nodes (variables) f reads
	grads  []*Node // x's gradient, then params', once the backward pass built them
}

// tie says which input of which region a tie Slice stands for.
type tie struct {
	r *region
	k int // 0: x; k ≥ 1: params[k-1]
}

// ties maps the one-element Slices that tie a region's inputs to its
// output (see Checkpoint) to their region; an entry goes away with its node.
var ties sync.Map // weak.Pointer[Node] → tie

// Checkpoint returns f(x), built so that Gradient recomputes f's
// intermediate values in the backward pass instead of keeping them from
// the forward pass: the activation checkpointing of torch.utils.checkpoint
// (per decoder layer, HF's gradient_checkpointing) and of Liger's chunked
// losses. Only x and the Parameter nodes (variables) that f reads live
// from the forward pass to the backward pass.
//
// How: the forward value is f(x) with its gradient stopped, plus an exact
// zero that depends on one element of x and of every float Parameter f
// reads (the "tie"); the output's custom gradient builds f again from x —
// in the backward pass, where GoMLX's sequential SimpleGo executor runs
// it, as it runs nodes in the order they were made and frees each buffer
// after its last use — differentiates that copy, and hands the gradients
// of x and of the parameters to the tie's Slices (see sliceVJP).
//
// XLA schedules a graph itself and may merge the two builds of f (common
// subexpression elimination): the result is the same, the saving may not
// be.
//
// f is called twice and must build the same deterministic function of x
// each time (no random numbers, no variable updates); every activation it
// differentiates must come in through x: nodes it captures other than
// Parameters and Constants (position tables, masks) get no gradient.
// Graph building: panics on error.
func Checkpoint(f func(x *Node) *Node, x *Node) *Node {
	Register()
	g := x.Graph()
	start := g.LastNode().Id() + 1
	y := f(x)
	end := g.LastNode().Id()
	r := &region{f: f, x: x}
	seen := map[NodeId]bool{}
	// A parameter read only through StopGradient inside f has no gradient
	// to give (a frozen quantization scale): it is left out, so that the
	// backward pass builds no gradient of the ops behind the stop.
	differentiable := map[NodeId]bool{}
	for id := start; id <= end; id++ {
		n := g.NodeById(id)
		if n.StopGradient() {
			continue
		}
		for _, in := range n.Inputs() {
			differentiable[in.Id()] = true
		}
	}
	for id := start; id <= end; id++ {
		// Parameters f reads: made before (inputs from outside) or by f's
		// first read of a variable (then inside the region).
		n := g.NodeById(id)
		for _, in := range append([]*Node{n}, n.Inputs()...) {
			if seen[in.Id()] || (in != n && in.Id() >= start) {
				continue
			}
			seen[in.Id()] = true
			if in != x && in.Type() == NodeTypeParameter && in.DType().IsFloat() && differentiable[in.Id()] {
				r.params = append(r.params, in)
			}
		}
	}

	// The tie: Where(false, Σ one element of each input, 0) is exactly 0
	// but gives the backward pass a path from the output to every input.
	var sum *Node
	for k, u := range append([]*Node{x}, r.params...) {
		if u.Rank() == 0 {
			continue // no Slice of a scalar; none in practice
		}
		first := make([]SliceAxisSpec, u.Rank())
		for i := range first {
			first[i] = AxisRange(0, 1)
		}
		one := Slice(u, first...)
		key := weak.Make(one)
		ties.Store(key, tie{r: r, k: k})
		runtime.AddCleanup(one, func(k weak.Pointer[Node]) { ties.Delete(k) }, key)
		s := ConvertDType(Reshape(one), dtypes.Float32)
		if sum == nil {
			sum = s
		} else {
			sum = Add(sum, s)
		}
	}
	zero := Where(Const(g, false), ConvertDType(sum, y.DType()), ScalarZero(g, y.DType()))
	return IdentityWithCustomGradient(Add(StopGradient(y), zero), func(_, v *Node) *Node {
		r.backward(v)
		return v // reaches the tie (and the stopped y); the tie's Slices return r.grads
	})
}

// backward builds f again on a stand-in of x whose gradient stops there
// (so that nothing flows into what made x twice) and differentiates it
// against v, the gradient arriving at the region's output.
func (r *region) backward(v *Node) {
	x := IdentityWithCustomGradient(r.x, func(_, _ *Node) *Node { return nil })
	y := r.f(x)
	if !y.Shape().Equal(v.Shape()) {
		panic(fmt.Sprintf("vjp: Checkpoint: f built %s in the backward pass, %s in the forward pass", y.Shape(), v.Shape()))
	}
	root := ReduceAllSum(IdentityWithCustomGradient(y, func(_, _ *Node) *Node { return v }))
	r.grads = Gradient(root, append([]*Node{x}, r.params...)...)
}

// tieVJP returns the gradient of the input a tie Slice stands for, or
// ok false when node is not a tie.
func tieVJP(node *Node) (grad *Node, ok bool) {
	v, found := ties.Load(weak.Make(node))
	if !found {
		return nil, false
	}
	t := v.(tie)
	if t.r.grads == nil {
		panic("vjp: Checkpoint: a tie was reached before its region's output")
	}
	return t.r.grads[t.k], true
}
