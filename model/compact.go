package model

import (
	"fmt"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/internal/gemm"
)

// compact.go: finished rows leave the decode batch.
//
// Every row of a decode step costs the same whether its completion has
// stopped or not, and GRPO's completions stop at very different lengths.
// When enough rows have stopped, Generate gathers the live rows' KV caches
// (and, with shared prompt caches, the prompts of the groups that still
// have live rows) into a smaller batch, so that the step's cost follows the
// live rows. Sampling is untouched: the sampler keeps Generate's rows in
// their order and draws its random numbers for the unfinished ones as
// before; only the device batch changes.
//
// The tokens must not change, so neither may the logits: every op of a
// decode step computes a row from that row alone, and the products sum each
// output in an order that depends only on the number of rows of their left
// operand's class (gemm.RowClass). A smaller batch is therefore chosen only
// within the class of the batch it replaces: for the weights' products (as
// many rows as the batch) and, with shared prompt caches, for the prompt
// attention's products (group width × query heads per KV head rows).
// TestCompactionKeepsTokens holds compacted generation to uncompacted,
// logits bit for bit.

// batchLayout maps a decode step's batch rows to Generate's rows: batch
// row j decodes row rows[j]. With shared prompt caches the batch is
// len(groups) groups of equal width, group k (rows [k·w, (k+1)·w)) the
// rows of prompt groups[k], its prompt cache the k-th.
type batchLayout struct {
	rows   []int
	groups []int // nil without shared prompt caches
}

// identityLayout is the batch of Generate's n rows in order (p prompts'
// groups when shared).
func identityLayout(n, p int, shared bool) batchLayout {
	l := batchLayout{rows: make([]int, n)}
	for i := range l.rows {
		l.rows[i] = i
	}
	if shared {
		l.groups = make([]int, p)
		for i := range l.groups {
			l.groups[i] = i
		}
	}
	return l
}

// width is the rows per group (shared prompt caches).
func (l batchLayout) width() int { return len(l.rows) / len(l.groups) }

// compacts reports whether Generate may drop finished rows from its batch:
// on the go backend in float32, whose products' summation orders
// gemm.RowClass describes.
func (m *Model) compacts() bool {
	return backend.IsGo(m.backend) && m.Compute() == dtypes.Float32
}

// sizeRung reports whether a batch (or group) of n rows is one to compact
// to: a power of two or three times one (1, 2, 3, 4, 6, 8, 12, 16, 24, …),
// or the smallest size of its class. Few sizes mean few compiled decode
// graphs.
func sizeRung(n int, class func(int) int) bool {
	if classFloor(n, class) {
		return true
	}
	if n%3 == 0 {
		n /= 3
	}
	return n&(n-1) == 0
}

// classFloor reports whether n is the smallest size of its class.
func classFloor(n int, class func(int) int) bool { return n > 1 && class(n-1) != class(n) }

// smallEnough reports whether a batch of b rows is worth gathering in place
// of one of B: at most three quarters of it.
func smallEnough(b, B int) bool { return 4*b <= 3*B }

// planCompaction returns a batch holding every row of cur that live marks
// (by Generate's row), small enough to be worth it (smallEnough) and in the
// row classes of cur, or ok false when there is none. rep is the query
// heads per KV head (with shared prompt caches the prompt products have
// width·rep rows); class is gemm.RowClass. Rows keep their order; a group
// with fewer live rows than the new width (a rung, or the old width) is
// filled with finished rows of its prompt, and groups with no live row
// leave unless a class needs them.
func planCompaction(cur batchLayout, live []bool, rep int, class func(int) int) (next batchLayout, ok bool) {
	B := len(cur.rows)
	if cur.groups == nil {
		var keep, fill []int
		for _, r := range cur.rows {
			if live[r] {
				keep = append(keep, r)
			} else {
				fill = append(fill, r)
			}
		}
		for b := max(len(keep), 1); smallEnough(b, B); b++ {
			if class(b) == class(B) && sizeRung(b, class) {
				return batchLayout{rows: append(keep, fill[:b-len(keep)]...)}, true
			}
		}
		return batchLayout{}, false
	}
	w := cur.width()
	type group struct{ keep, fill []int }
	var kept, dead []group
	var keptIdx, deadIdx []int
	most := 0
	for k, p := range cur.groups {
		var g group
		for _, r := range cur.rows[k*w : (k+1)*w] {
			if live[r] {
				g.keep = append(g.keep, r)
			} else {
				g.fill = append(g.fill, r)
			}
		}
		if len(g.keep) == 0 {
			dead, deadIdx = append(dead, g), append(deadIdx, p)
			continue
		}
		kept, keptIdx = append(kept, g), append(keptIdx, p)
		most = max(most, len(g.keep))
	}
	bestW, bestP := 0, 0
	for nw := max(most, 1); nw <= w; nw++ {
		if class(nw*rep) != class(w*rep) || (nw != w && !sizeRung(nw, func(n int) int { return class(n * rep) })) {
			continue
		}
		for np := max(len(kept), 1); np <= len(cur.groups); np++ {
			if b := np * nw; smallEnough(b, B) && class(b) == class(B) && (bestW == 0 || b < bestW*bestP) {
				bestW, bestP = nw, np
			}
		}
	}
	if bestW == 0 {
		return batchLayout{}, false
	}
	groups := append(append([]group{}, kept...), dead[:bestP-len(kept)]...)
	next.groups = append(append([]int{}, keptIdx...), deadIdx[:bestP-len(kept)]...)
	for _, g := range groups {
		next.rows = append(next.rows, g.keep...)
		next.rows = append(next.rows, g.fill[:bestW-len(g.keep)]...)
	}
	return next, true
}

// compactCaches gathers the rows of next (and its groups' prompt caches)
// from the caches of cur, finalizing the old caches: caches are each
// layer's row caches, prefix the shared prompt caches (prefillGraph).
func (m *Model) compactCaches(cur, next batchLayout, caches, prefix []*tensors.Tensor) (newCaches, newPrefix []*tensors.Tensor, err error) {
	rows, groups := indexIn(cur.rows, next.rows), indexIn(cur.groups, next.groups)
	for i, c := range append(slices.Clone(caches), prefix...) {
		idx := rows
		if i >= len(caches) {
			idx = groups
		}
		g, err := gatherRows(c, idx)
		if err != nil {
			for _, t := range append(newCaches, newPrefix...) {
				t.FinalizeAll()
			}
			return nil, nil, err
		}
		if i < len(caches) {
			newCaches = append(newCaches, g)
		} else {
			newPrefix = append(newPrefix, g)
		}
	}
	for _, c := range append(caches, prefix...) {
		c.FinalizeAll()
	}
	return newCaches, newPrefix, nil
}

// indexIn returns the index in from of each element of to (all present).
func indexIn(from, to []int) []int {
	at := make(map[int]int, len(from))
	for i, x := range from {
		at[x] = i
	}
	out := make([]int, len(to))
	for i, x := range to {
		out[i] = at[x]
	}
	return out
}

// gatherRows returns the float32 tensor of t's leading-axis rows in the
// given order: one copy per row on the host (SimpleGo's Gather moves one
// element at a time, about ten times slower for the caches).
func gatherRows(t *tensors.Tensor, rows []int) (out *tensors.Tensor, err error) {
	d := t.Shape().Dimensions
	n := t.Shape().Size() / d[0]
	out = tensors.FromShape(shapes.Make(t.DType(), append([]int{len(rows)}, d[1:]...)...))
	err = tensors.ConstFlatData(t, func(src []float32) {
		tensors.MutableFlatData(out, func(dst []float32) {
			for j, r := range rows {
				copy(dst[j*n:(j+1)*n], src[r*n:(r+1)*n])
			}
		})
	})
	if err != nil {
		return nil, fmt.Errorf("model: generate: dropping finished rows: %w", err)
	}
	return out, nil
}

// rowClass is the class of a product with n rows of A (gemm.RowClass).
func rowClass(n int) int { return gemm.RowClass(n) }
