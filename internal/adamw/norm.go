package adamw

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
)

// The global gradient norm is summed in two levels: each row's squares
// (the last axis) in the gradient's dtype, then the row sums in float64.
// One sequential float32 sum over a whole tensor loses the small terms
// once the total is 2²⁴ times larger than each: at SmolLM2-135M's
// embedding (28M elements) the norm came out about 1.6e-4 low, and
// several percent low at larger vocabularies, which moves clipping. A
// row is a few hundred to a few thousand elements, so the float32 part
// stays within about 1e-6 of the exact norm.

// SumSquares returns Σ x[i]² of x laid out in rows of row elements: each
// row's squares rounded to float32 and added in index order, the row sums
// added in float64. These are the bits of NormGraph's sum on the
// pure-Go backend, whose reductions are sequential.
func SumSquares(x []float32, row int) float64 {
	if row <= 0 || row > len(x) {
		row = max(len(x), 1)
	}
	var total float64
	for start := 0; start < len(x); start += row {
		var acc float32
		for _, v := range x[start:min(start+row, len(x))] {
			acc += float32(v * v)
		}
		total += float64(acc)
	}
	return total
}

// RowLength is the row SumSquares takes for a tensor of these dimensions:
// its last axis (the whole tensor when it is a scalar).
func RowLength(dims []int) int {
	if len(dims) == 0 {
		return 1
	}
	return dims[len(dims)-1]
}

// squaresGraph returns Σ x² over every element of grads as a float64
// scalar, summed as SumSquares sums.
func squaresGraph(grads []*Node) *Node {
	var sq *Node
	for _, gr := range grads {
		rows := Square(gr)
		if gr.Rank() > 0 {
			rows = ReduceSum(rows, -1)
		}
		s := ReduceAllSum(ConvertDType(rows, dtypes.Float64))
		if sq == nil {
			sq = s
		} else {
			sq = Add(sq, s)
		}
	}
	return sq
}

// NormGraph is the global L2 norm of grads, float32 (the square root
// taken in float64, as the host takes it).
func NormGraph(grads []*Node) *Node {
	return ConvertDType(Sqrt(squaresGraph(grads)), dtypes.Float32)
}
