package adamw_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math.
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/grpokit/grpokit/internal/adamw"
	"github.com/grpokit/grpokit/internal/backend"
)

// exactSquares is Σ x² in float64 with Neumaier's compensation: the
// reference the float32 row sums are held to.
func exactSquares(x []float32) float64 {
	var sum, comp float64
	for _, v := range x {
		t := float64(v) * float64(v)
		s := sum + t
		if math.Abs(sum) >= t {
			comp += (sum - s) + t
		} else {
			comp += (t - s) + sum
		}
		sum = s
	}
	return sum + comp
}

func gaussian(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 1e-3)
	}
	return x
}

// TestSumSquaresAccuracy: the norm of an embedding-sized gradient
// (SmolLM2-135M's 49152×576 and a wider one) within 1e-6 of the exact
// norm, where one float32 sum over the whole tensor falls several
// percent short.
func TestSumSquaresAccuracy(t *testing.T) {
	for _, dims := range [][2]int{{49152, 576}, {16384, 2048}, {1, 4096}} {
		t.Run(fmt.Sprint(dims), func(t *testing.T) {
			x := gaussian(dims[0]*dims[1], uint64(dims[1]))
			want := math.Sqrt(exactSquares(x))
			got := math.Sqrt(adamw.SumSquares(x, dims[1]))
			if rel := math.Abs(got-want) / want; rel > 1e-6 {
				t.Errorf("norm %.9g, exact %.9g: relative %.2g > 1e-6", got, want, rel)
			}
			if dims[0] > 1 {
				var flat float32
				for _, v := range x {
					flat += v * v
				}
				if rel := math.Abs(math.Sqrt(float64(flat))-want) / want; rel < 1e-4 {
					t.Errorf("one float32 sum is only %.2g off: the check cannot tell the two apart", rel)
				}
			}
		})
	}
}

// TestNormGraphMatchesHost: on the pure-Go backend the graph's norm is
// SumSquares' bit for bit, for a scalar, a vector, a matrix and a rank-3
// gradient, as the host clipping in grpo relies on.
func TestNormGraphMatchesHost(t *testing.T) {
	b, err := backend.New("")
	if err != nil {
		t.Fatal(err)
	}
	shapes := [][]int{{}, {577}, {300, 129}, {7, 33, 65}}
	var grads []*tensors.Tensor
	var want float64
	for i, dims := range shapes {
		n := 1
		for _, d := range dims {
			n *= d
		}
		x := gaussian(n, uint64(i+7))
		want += adamw.SumSquares(x, adamw.RowLength(dims))
		grads = append(grads, tensors.FromFlatDataAndDimensions(x, dims...))
	}
	out := MustExecOnce(b, func(xs []*Node) *Node { return adamw.NormGraph(xs) }, grads)
	got := tensors.ToScalar[float32](out)
	if w := float32(math.Sqrt(want)); got != w {
		t.Errorf("graph norm %.9g (%08x), host %.9g (%08x)", got, math.Float32bits(got), w, math.Float32bits(w))
	}
}
