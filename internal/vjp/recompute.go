package vjp

import (
	"runtime"
	"sync"
	"weak"

	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// recipe rebuilds a node from its inputs.
type recipe struct {
	inputs []weak.Pointer[Node]
	build  func(in ...*Node) *Node
}

// recipes maps nodes made by Recompute to how to make them again; an entry
// goes away with its node.
var recipes sync.Map // weak.Pointer[Node] → recipe

// Recompute returns build(inputs...) and remembers how it was made, so that
// the DotGeneral gradient uses a fresh copy, built where the backward pass
// needs it, instead of the forward pass's node. SimpleGo runs nodes in the
// order they were made and frees a buffer after its last use, so a weight
// widened (or dequantized) from low precision lives only around each of its
// products rather than from the forward pass to the backward pass. build
// must be a pure function of its inputs and must not capture nodes.
// Graph building: panics on error.
func Recompute(build func(in ...*Node) *Node, inputs ...*Node) *Node {
	out := build(inputs...)
	r := recipe{build: build, inputs: make([]weak.Pointer[Node], len(inputs))}
	for i, x := range inputs {
		r.inputs[i] = weak.Make(x)
	}
	key := weak.Make(out)
	recipes.Store(key, r)
	runtime.AddCleanup(out, func(k weak.Pointer[Node]) { recipes.Delete(k) }, key)
	return out
}

// fresh returns a new copy of x if Recompute made it, else x.
func fresh(x *Node) *Node {
	v, ok := recipes.Load(weak.Make(x))
	if !ok {
		return x
	}
	r := v.(recipe)
	in := make([]*Node, len(r.inputs))
	for i, w := range r.inputs {
		if in[i] = w.Value(); in[i] == nil {
			return x
		}
	}
	return r.build(in...)
}
