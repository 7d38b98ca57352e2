package backend

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// TestScatterRowsExecutor runs row ScatterSums (repeated and out-of-range
// rows included) through a graph on the go backend, with the operand
// donated (written in place) and not, and checks them bit for bit against
// a plain loop, and that the row executor ran them.
func TestScatterRowsExecutor(t *testing.T) {
	b := fastBackend(t)
	r := rand.New(rand.NewPCG(3, 4))
	const R, W = 9, 37
	idx := []int32{4, 0, 8, 4, 11, -1, 2}
	operand := make([]float32, R*W)
	updates := make([]float32, len(idx)*W)
	for i := range operand {
		operand[i] = float32(r.NormFloat64())
	}
	for i := range updates {
		updates[i] = float32(r.NormFloat64())
	}
	want := slices.Clone(operand)
	for i, row := range idx {
		if row < 0 || row >= R {
			continue
		}
		for j := range W {
			want[int(row)*W+j] += updates[i*W+j]
		}
	}
	exec := graph.MustNewExec(b, func(x, i, u *graph.Node) *graph.Node {
		return graph.ScatterSum(x, i, u, false, false)
	})
	for _, donate := range []bool{false, true} {
		x := tensors.FromFlatDataAndDimensions(slices.Clone(operand), R, W)
		var arg any = x
		if donate {
			d, err := graph.DonateTensorBuffer(x, b, 0)
			if err != nil {
				t.Fatal(err)
			}
			arg = d
		}
		calls := fastOpsCalls.Load()
		out := exec.MustExec(arg, tensors.FromFlatDataAndDimensions(slices.Clone(idx), len(idx), 1),
			tensors.FromFlatDataAndDimensions(slices.Clone(updates), len(idx), W))[0]
		if fastOpsCalls.Load() == calls {
			t.Errorf("donate=%v: the row scatter executor did not run", donate)
		}
		if got := tensors.MustCopyFlatData[float32](out); !slices.Equal(got, want) {
			t.Errorf("donate=%v: ScatterSum differs from the loop", donate)
		}
		if !donate && !slices.Equal(tensors.MustCopyFlatData[float32](x), operand) {
			t.Error("the operand changed though not donated")
		}
	}
}
