package backend

// Float32 executors of the SimpleGo ops that move data along axes:
// BroadcastInDim, ReduceSum/Max/Min and Transpose. See
// simplego_elementwise.go for how they are installed and when they step
// aside.

import (
	"math"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// broadcastInDimExec writes the operand's blocks with copy and fills the
// repeated axes by copying the first block already written.
func broadcastInDimExec(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
	stock := fastOpsStock[backends.OpTypeBroadcastInDim]
	if len(inputs) != 1 || fastOpsErr.Load() != nil {
		return stock(b, node, inputs, owned)
	}
	s, x, ok := f32Input(b, inputs, 0)
	outShape := nodeShape(node)
	bAxes, isInts := nodeData(node).([]int)
	if !ok || !isInts || outShape.DType != dtypes.Float32 || len(bAxes) != s.Rank() {
		return stock(b, node, inputs, owned)
	}
	if len(x) == 1 { // a fill (zeros of optimizer state, constants)
		out, o, ok := f32Output(b, outShape)
		if !ok {
			return stock(b, node, inputs, owned)
		}
		c := x[0]
		parallelFor(len(o), len(o), 64, func(lo, hi int) { fill(o[lo:hi], c) })
		fastOpsCalls.Add(1)
		return out, nil
	}
	// The operand's dimensions on the output axes (1 elsewhere); its flat
	// data is already in that layout when the axes are increasing.
	xd := make([]int, outShape.Rank())
	for i := range xd {
		xd[i] = 1
	}
	prev := -1
	for i, ax := range bAxes {
		if ax <= prev || ax >= len(xd) {
			return stock(b, node, inputs, owned)
		}
		xd[ax], prev = s.Dimensions[i], ax
	}
	axes, ok := collapseBinary(xd, outShape.Dimensions, outShape.Dimensions)
	if !ok {
		return stock(b, node, inputs, owned)
	}
	out, o, ok := f32Output(b, outShape)
	if !ok {
		return stock(b, node, inputs, owned)
	}
	last := len(axes) - 1
	var walk func(ax, xo, oo int)
	walk = func(ax, xo, oo int) {
		a := axes[ax]
		switch {
		case ax == last && a.ls == 0:
			fill(o[oo:oo+a.n], x[xo])
		case ax == last:
			copy(o[oo:oo+a.n], x[xo:xo+a.n])
		case a.ls == 0: // repeated axis: write one block, copy it
			walk(ax+1, xo, oo)
			block := o[oo : oo+a.os]
			for i := 1; i < a.n; i++ {
				copy(o[oo+i*a.os:], block)
			}
		default:
			for i := range a.n {
				walk(ax+1, xo+i*a.ls, oo+i*a.os)
			}
		}
	}
	a := axes[0]
	switch {
	case last == 0: // a copy (a fill would have len(x) == 1)
		parallelFor(a.n, 2*a.n, 64, func(lo, hi int) { copy(o[lo:hi], x[lo:hi]) })
	case a.ls == 0: // repeated outermost axis: write block 0, copy it
		walk(1, 0, 0)
		block := o[:a.os]
		parallelFor(a.n-1, 2*(a.n-1)*a.os, 1, func(lo, hi int) {
			for i := lo + 1; i <= hi; i++ {
				copy(o[i*a.os:], block)
			}
		})
	default:
		parallelFor(a.n, 2*a.n*a.os, 1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				walk(1, i*a.ls, i*a.os)
			}
		})
	}
	fastOpsCalls.Add(1)
	return out, nil
}

func fill(o []float32, c float32) {
	for i := range o {
		o[i] = c
	}
}

// rAxis is one collapsed axis of a reduction: its size, the operand's
// stride and the output's (0 for reduced axes).
type rAxis struct{ n, xs, os int }

// reduceExec returns the executor of a float32 ReduceSum, ReduceMax or
// ReduceMin. It visits the operand in flat order, as SimpleGo does, so
// every output element adds up the same values in the same order.
func reduceExec(opType backends.OpType) nodeExecutor {
	return func(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
		stock := fastOpsStock[opType]
		if len(inputs) != 1 || fastOpsErr.Load() != nil {
			return stock(b, node, inputs, owned)
		}
		s, x, ok := f32Input(b, inputs, 0)
		outShape := nodeShape(node)
		rAxes, isInts := nodeData(node).([]int)
		if !ok || !isInts || len(rAxes) == 0 || outShape.DType != dtypes.Float32 {
			return stock(b, node, inputs, owned)
		}
		reduced := make([]bool, s.Rank())
		for _, ax := range rAxes {
			if ax < 0 || ax >= len(reduced) || reduced[ax] {
				return stock(b, node, inputs, owned)
			}
			reduced[ax] = true
		}
		// Collapse, innermost first: drop size-1 axes, merge neighbours
		// that are both reduced or both kept.
		var axes []rAxis
		xStride, oStride, prevKind := 1, 1, -1
		for ax := s.Rank() - 1; ax >= 0; ax-- {
			n := s.Dimensions[ax]
			if n == 1 {
				continue
			}
			kind, a := 0, rAxis{n: n, xs: xStride, os: oStride}
			if reduced[ax] {
				kind, a.os = 1, 0
			} else {
				oStride *= n
			}
			if kind == prevKind {
				axes[0].n *= n
			} else {
				axes = append([]rAxis{a}, axes...)
			}
			prevKind, xStride = kind, xStride*n
		}
		if len(axes) == 0 || oStride != outShape.Size() {
			return stock(b, node, inputs, owned)
		}
		out, o, ok := f32Output(b, outShape)
		if !ok {
			return stock(b, node, inputs, owned)
		}
		switch opType {
		case backends.OpTypeReduceSum:
			fill(o, 0)
		case backends.OpTypeReduceMax:
			fill(o, float32(math.Inf(-1)))
		default:
			fill(o, float32(math.Inf(1)))
		}
		reduceWalk(opType, axes, o, x)
		fastOpsCalls.Add(1)
		return out, nil
	}
}

// reduceWalk reduces x into o (already holding the initial value) over
// the collapsed axes. The outermost kept axis is split across goroutines:
// each owns a slice of the output and visits its inputs in flat order, so
// the result does not depend on the split. A full reduction (no kept
// axis) runs on the caller.
func reduceWalk(opType backends.OpType, axes []rAxis, o, x []float32) {
	split := -1
	for i, a := range axes {
		if a.os != 0 {
			split = i
			break
		}
	}
	if split < 0 {
		reduceRange(opType, axes, o, x, -1, 0, 0)
		return
	}
	align := 1
	if split == len(axes)-1 {
		align = 16
	}
	parallelFor(axes[split].n, len(x), align, func(lo, hi int) { reduceRange(opType, axes, o, x, split, lo, hi) })
}

// reduceRange is reduceWalk restricted to indices [lo, hi) of axis split
// (none when split < 0).
func reduceRange(opType backends.OpType, axes []rAxis, o, x []float32, split, lo, hi int) {
	last := len(axes) - 1
	var walk func(ax, xo, oo int)
	walk = func(ax, xo, oo int) {
		a := axes[ax]
		i0, i1 := 0, a.n
		if ax == split {
			i0, i1 = lo, hi
		}
		if ax < last {
			for i := i0; i < i1; i++ {
				walk(ax+1, xo+i*a.xs, oo+i*a.os)
			}
			return
		}
		xx := x[xo+i0 : xo+i1]
		if a.os == 0 { // reduce a contiguous run into one element
			acc := o[oo]
			switch opType {
			case backends.OpTypeReduceSum:
				for _, v := range xx {
					acc += v
				}
			case backends.OpTypeReduceMax:
				acc = maxRun(acc, xx)
			default:
				acc = minRun(acc, xx)
			}
			o[oo] = acc
			return
		}
		oo2 := o[oo+i0 : oo+i1]
		switch opType {
		case backends.OpTypeReduceSum:
			for i, v := range xx {
				oo2[i] += v
			}
		case backends.OpTypeReduceMax:
			for i, v := range xx {
				oo2[i] = max(oo2[i], v)
			}
		default:
			for i, v := range xx {
				oo2[i] = min(oo2[i], v)
			}
		}
	}
	walk(0, 0, 0)
}

// transposeExec walks the output in order, gathering from the operand;
// output axes that stay adjacent in the operand are merged first, so a
// run that is contiguous in both becomes one copy.
func transposeExec(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
	stock := fastOpsStock[backends.OpTypeTranspose]
	if len(inputs) != 1 || fastOpsErr.Load() != nil {
		return stock(b, node, inputs, owned)
	}
	s, x, ok := f32Input(b, inputs, 0)
	outShape := nodeShape(node)
	perm, isInts := nodeData(node).([]int)
	rank := s.Rank()
	if !ok || !isInts || len(perm) != rank || outShape.DType != dtypes.Float32 || outShape.Size() != len(x) {
		return stock(b, node, inputs, owned)
	}
	xs := make([]int, rank)
	for ax, st := rank-1, 1; ax >= 0; ax-- {
		xs[ax], st = st, st*s.Dimensions[ax]
	}
	seen := make([]bool, rank)
	var axes []rAxis // os is the output stride, xs the operand's
	oStride := 1
	for j := rank - 1; j >= 0; j-- {
		p := perm[j]
		if p < 0 || p >= rank || seen[p] || outShape.Dimensions[j] != s.Dimensions[p] {
			return stock(b, node, inputs, owned)
		}
		seen[p] = true
		n := s.Dimensions[p]
		if n == 1 {
			continue
		}
		if len(axes) > 0 && xs[p] == axes[0].xs*axes[0].n {
			axes[0].n *= n // contiguous with the axis inside it in both
		} else {
			axes = append([]rAxis{{n: n, xs: xs[p], os: oStride}}, axes...)
		}
		oStride *= n
	}
	out, o, ok := f32Output(b, outShape)
	if !ok {
		return stock(b, node, inputs, owned)
	}
	if len(axes) == 0 || len(axes) == 1 && axes[0].xs == 1 { // a copy
		parallelFor(len(o), 2*len(o), 64, func(lo, hi int) { copy(o[lo:hi], x[lo:hi]) })
		fastOpsCalls.Add(1)
		return out, nil
	}
	last := len(axes) - 1
	var walk func(ax, xo, oo int)
	walk = func(ax, xo, oo int) {
		a := axes[ax]
		if ax < last {
			for i := range a.n {
				walk(ax+1, xo+i*a.xs, oo+i*a.os)
			}
			return
		}
		if a.xs == 1 {
			copy(o[oo:oo+a.n], x[xo:xo+a.n])
			return
		}
		oo2 := o[oo : oo+a.n]
		for i := range oo2 {
			oo2[i] = x[xo+i*a.xs]
		}
	}
	if last == 0 { // one gathered run
		a := axes[0]
		parallelFor(a.n, 2*a.n, 64, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				o[i] = x[i*a.xs]
			}
		})
	} else {
		a := axes[0]
		parallelFor(a.n, 2*len(o), 1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				walk(1, i*a.xs, i*a.os)
			}
		})
	}
	fastOpsCalls.Add(1)
	return out, nil
}

// maxRun returns the max of acc and xx. Go's max on floats is exactly
// associative and commutative (any NaN wins, +0 beats -0), so four
// independent chains give the same result as one, four times faster.
func maxRun(acc float32, xx []float32) float32 {
	a0, a1, a2, a3 := acc, acc, acc, acc
	i := 0
	for ; i+4 <= len(xx); i += 4 {
		a0, a1, a2, a3 = max(a0, xx[i]), max(a1, xx[i+1]), max(a2, xx[i+2]), max(a3, xx[i+3])
	}
	for ; i < len(xx); i++ {
		a0 = max(a0, xx[i])
	}
	return max(max(a0, a1), max(a2, a3))
}

// minRun is maxRun for min.
func minRun(acc float32, xx []float32) float32 {
	a0, a1, a2, a3 := acc, acc, acc, acc
	i := 0
	for ; i+4 <= len(xx); i += 4 {
		a0, a1, a2, a3 = min(a0, xx[i]), min(a1, xx[i+1]), min(a2, xx[i+2]), min(a3, xx[i+3])
	}
	for ; i < len(xx); i++ {
		a0 = min(a0, xx[i])
	}
	return min(min(a0, a1), min(a2, a3))
}
