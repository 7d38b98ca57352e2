// Package vjp replaces GoMLX's gradient of DotGeneral with one made of two
// DotGenerals and a transpose, and the gradient of Slice (stride 1) with one
// made of Concatenate with zeros, because the stock one needs Pad, which the
// pure-Go backend lacks. Recompute and Checkpoint trade computation for
// memory in the backward pass.
//
// The stock gradient in gomlx v0.26.0 materialises a [batch, M, N, K] tensor
// (seconds per small layer, ~100 GB for an LM head). Register changes
// graph.VJPRegistration, a table shared by the whole process, so it is done
// once (sync.Once) and callers (model.Load, model.New, grpo.NewTrainer) say so
// in their docs.
package vjp

import (
	"fmt"
	"reflect"
	"slices"
	"sync"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

var once sync.Once

// Register installs the DotGeneral and Slice gradients in graph.VJPRegistration.
// It is safe to call many times and from many goroutines.
func Register() {
	once.Do(func() {
		stock := VJPRegistration[NodeTypeDotGeneral]
		VJPRegistration[NodeTypeDotGeneral] = func(node *Node, vs []*Node, outShape shapes.Shape) []*Node {
			ax, ok := dotAxes(node)
			if !ok || !hasCross(node, ax) {
				return stock(node, vs, outShape)
			}
			return dotGeneralGrad(node, vs[0], ax)
		}
		stockSlice := VJPRegistration[NodeTypeSlice]
		VJPRegistration[NodeTypeSlice] = func(node *Node, vs []*Node, outShape shapes.Shape) []*Node {
			if grad, ok := tieVJP(node); ok {
				return []*Node{grad} // a Checkpoint region's input
			}
			starts, limits, ok := sliceParams(node)
			if !ok {
				return stockSlice(node, vs, outShape)
			}
			return []*Node{sliceGrad(node.Inputs()[0], vs[0], starts, limits)}
		}
	})
}

// axes are the static parameters of a DotGeneral node.
type axes struct {
	lhsContract, lhsBatch, rhsContract, rhsBatch []int
}

// dotAxes reads the unexported DotGeneral parameters of node by reflection
// (read-only; gomlx is pinned at v0.26.0, and a test checks this still works).
func dotAxes(node *Node) (ax axes, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	in := reflect.ValueOf(node).Elem().FieldByName("inputs")
	if !in.IsValid() || in.IsNil() {
		return ax, false
	}
	p := in.Elem()
	if p.Kind() == reflect.Pointer {
		p = p.Elem()
	}
	get := func(name string) []int {
		f := p.FieldByName(name)
		out := make([]int, f.Len())
		for i := range out {
			out[i] = int(f.Index(i).Int())
		}
		return out
	}
	ax = axes{get("lhsContractingAxes"), get("lhsBatchAxes"), get("rhsContractingAxes"), get("rhsBatchAxes")}
	return ax, len(ax.lhsContract) == len(ax.rhsContract) && len(ax.lhsBatch) == len(ax.rhsBatch)
}

// crossAxes lists the axes of a rank-r operand that are neither contracted nor batch.
func crossAxes(rank int, contract, batch []int) []int {
	var out []int
	for a := range rank {
		if !slices.Contains(contract, a) && !slices.Contains(batch, a) {
			out = append(out, a)
		}
	}
	return out
}

// hasCross reports whether both operands keep at least one free axis; the
// stock gradient is cheap otherwise and handles those cases.
func hasCross(node *Node, ax axes) bool {
	lhs, rhs := node.Inputs()[0], node.Inputs()[1]
	return len(crossAxes(lhs.Rank(), ax.lhsContract, ax.lhsBatch)) > 0 &&
		len(crossAxes(rhs.Rank(), ax.rhsContract, ax.rhsBatch)) > 0
}

// iota returns [start, start+1, ..., start+n-1].
func iota(start, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = start + i
	}
	return out
}

// rankIn returns the position of a within the sorted values of set.
func rankIn(set []int, a int) int {
	s := slices.Clone(set)
	slices.Sort(s)
	return slices.Index(s, a)
}

// dotGeneralGrad returns [dLhs, dRhs] for out = DotGeneral(lhs, rhs) and
// upstream gradient v shaped [batch..., lhsCross..., rhsCross...].
func dotGeneralGrad(node, v *Node, ax axes) []*Node {
	lhs, rhs := node.Inputs()[0], node.Inputs()[1]
	lc := crossAxes(lhs.Rank(), ax.lhsContract, ax.lhsBatch)
	rc := crossAxes(rhs.Rank(), ax.rhsContract, ax.rhsBatch)
	nb, nlc, nrc, nk := len(ax.lhsBatch), len(lc), len(rc), len(ax.lhsContract)
	if v.Rank() != nb+nlc+nrc {
		panic(fmt.Sprintf("vjp: DotGeneral gradient rank %d, want %d", v.Rank(), nb+nlc+nrc))
	}
	vBatch := iota(0, nb)

	// Each gradient is one DotGeneral whose output axes come out in one of
	// two orders, depending on which operand goes first; the one that needs
	// no transpose (else one that keeps the last axis in place, a copy of
	// whole rows) is built. For x·Wᵀ the weight gradient comes out as
	// [out, in] directly: its transpose cost more than the product's packing.

	// dLhs = v · rhs over the rhs cross axes: [batch, lhsCross, rhsContract(sorted)],
	// or rhs · v: [batch, rhsContract(sorted), lhsCross].
	// A weight widened from low precision is widened again here (Recompute).
	permL1, permL2 := make([]int, lhs.Rank()), make([]int, lhs.Rank())
	for i, a := range ax.lhsBatch {
		permL1[a], permL2[a] = i, i
	}
	for j, a := range lc {
		permL1[a], permL2[a] = nb+j, nb+nk+j
	}
	for k, a := range ax.lhsContract {
		r := rankIn(ax.rhsContract, ax.rhsContract[k])
		permL1[a], permL2[a] = nb+nlc+r, nb+r
	}
	var dl *Node
	if transposeCost(permL2) < transposeCost(permL1) {
		dl = transposeIfNeeded(DotGeneral(fresh(rhs), rc, ax.rhsBatch, v, iota(nb+nlc, nrc), vBatch), permL2)
	} else {
		dl = transposeIfNeeded(DotGeneral(v, iota(nb+nlc, nrc), vBatch, fresh(rhs), rc, ax.rhsBatch), permL1)
	}

	// dRhs = lhs · v over the lhs cross axes: [batch, lhsContract(sorted), rhsCross],
	// or v · lhs: [batch, rhsCross, lhsContract(sorted)].
	permR1, permR2 := make([]int, rhs.Rank()), make([]int, rhs.Rank())
	for i, a := range ax.rhsBatch {
		permR1[a], permR2[a] = i, i
	}
	for j, a := range rc {
		permR1[a], permR2[a] = nb+nk+j, nb+j
	}
	for k, a := range ax.rhsContract {
		r := rankIn(ax.lhsContract, ax.lhsContract[k])
		permR1[a], permR2[a] = nb+r, nb+nrc+r
	}
	var dr *Node
	if transposeCost(permR2) < transposeCost(permR1) {
		dr = transposeIfNeeded(DotGeneral(v, iota(nb, nlc), vBatch, fresh(lhs), lc, ax.lhsBatch), permR2)
	} else {
		dr = transposeIfNeeded(DotGeneral(fresh(lhs), lc, ax.lhsBatch, v, iota(nb, nlc), vBatch), permR1)
	}
	return []*Node{
		ConvertDType(dl, lhs.DType()),
		ConvertDType(dr, rhs.DType()),
	}
}

// transposeCost ranks a permutation: 0 for none, 1 when the last axis stays
// last (the transpose copies whole rows), 2 otherwise (a gather).
func transposeCost(perm []int) int {
	for i, p := range perm {
		if i != p {
			if perm[len(perm)-1] == len(perm)-1 {
				return 1
			}
			return 2
		}
	}
	return 0
}

func transposeIfNeeded(x *Node, perm []int) *Node {
	for i, p := range perm {
		if i != p {
			return TransposeAllAxes(x, perm...)
		}
	}
	return x
}

// sliceParams reads a Slice node's starts and limits; ok is false for
// strided slices (left to the stock gradient).
func sliceParams(node *Node) (starts, limits []int, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	p := reflect.ValueOf(node).Elem().FieldByName("inputs").Elem()
	if p.Kind() == reflect.Pointer {
		p = p.Elem()
	}
	get := func(name string) []int {
		f := p.FieldByName(name)
		out := make([]int, f.Len())
		for i := range out {
			out[i] = int(f.Index(i).Int())
		}
		return out
	}
	starts, limits = get("starts"), get("limits")
	for _, s := range get("strides") {
		if s > 1 {
			return nil, nil, false
		}
	}
	return starts, limits, len(starts) == node.Rank() && len(limits) == node.Rank()
}

// sliceGrad places v back at [starts, limits) of a zero tensor shaped like
// x, one axis at a time, with Concatenate.
func sliceGrad(x, v *Node, starts, limits []int) *Node {
	g := v
	for axis := range x.Rank() {
		dim := x.Shape().Dimensions[axis]
		parts := []*Node{}
		zeros := func(n int) *Node {
			dims := slices.Clone(g.Shape().Dimensions)
			dims[axis] = n
			return Zeros(x.Graph(), shapes.Make(v.DType(), dims...))
		}
		if starts[axis] > 0 {
			parts = append(parts, zeros(starts[axis]))
		}
		parts = append(parts, g)
		if limits[axis] < dim {
			parts = append(parts, zeros(dim-limits[axis]))
		}
		if len(parts) > 1 {
			g = Concatenate(parts, axis)
		}
	}
	return g
}
