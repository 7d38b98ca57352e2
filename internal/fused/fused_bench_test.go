package fused

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/internal/vjp"
)

// BenchmarkChains: each chain's forward and gradient (one compiled graph:
// the output and the gradients of Σ output·v) at the shapes of one
// SmolLM2-135M layer in the GRPO step (16 rows × 86 tokens), fused and as
// the plain chain the model builds otherwise; cpu-ms/op is the process's
// CPU time (both cores), steadier than wall time on a shared machine:
//
//	go test -run x -bench Chains ./internal/fused
func BenchmarkChains(b *testing.B) {
	const B, T, H, I, nh, nkv, hd = 16, 86, 576, 1536, 9, 3, 64
	type chain struct {
		name         string
		dims         [][]int // float32 inputs; the last is v (the output's shape)
		mask         bool    // a bool mask of the first input's shape comes last
		fused, plain func(in []*Node) *Node
		wrt          []int
	}
	const eps, scale, fill = 1e-5, 0.125, -1e30
	chains := []chain{
		{"swiglu", [][]int{{B * T, I}, {B * T, I}, {B * T, I}}, false,
			func(in []*Node) *Node { return SwiGLU(in[0], in[1]) },
			func(in []*Node) *Node { return Mul(Mul(in[0], Sigmoid(in[0])), in[1]) }, []int{0, 1}},
		{"rmsnorm", [][]int{{B, T, H}, {1, 1, H}, {B, T, H}}, false,
			func(in []*Node) *Node { return RMSNorm(in[0], in[1], eps) },
			func(in []*Node) *Node {
				ms := ReduceAndKeep(Square(in[0]), ReduceMean, -1)
				return Mul(Div(in[0], Sqrt(AddScalar(ms, eps))), in[1])
			}, []int{0, 1}},
		{"softmax", [][]int{{B, nkv, T, nh / nkv, T}, {B, nkv, T, nh / nkv, T}}, true,
			func(in []*Node) *Node { return AttentionSoftmax(in[0], in[2], scale, fill) },
			func(in []*Node) *Node {
				return Softmax(Where(in[2], MulScalar(in[0], scale), Scalar(in[0].Graph(), dtypes.Float32, fill)), -1)
			}, []int{0}},
		{"rope", [][]int{{B, T, nh, hd}, {B, T, 1, hd}, {B, T, nh, hd}}, false,
			func(in []*Node) *Node { return RoPE(in[0], in[1]) },
			func(in []*Node) *Node {
				// The ±1 product form SimpleGo built before (model/forms.go).
				r := make([][]float32, hd)
				for i := range r {
					r[i] = make([]float32, hd)
				}
				for j := range hd / 2 {
					r[j+hd/2][j], r[j][j+hd/2] = -1, 1
				}
				rot := DotGeneral(in[0], []int{3}, nil, Const(in[0].Graph(), r), []int{0}, nil)
				return Add(Mul(in[0], in[1]), Mul(rot, in[1]))
			}, []int{0}},
	}
	vjp.Register() // the model's DotGeneral gradient (the plain RoPE's product)
	be := backend.Must("")
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range chains {
		var args []any
		for _, d := range c.dims {
			n := 1
			for _, x := range d {
				n *= x
			}
			args = append(args, tensors.FromFlatDataAndDimensions(randSlice(rng, n, 1), d...))
		}
		if c.mask {
			m := make([]bool, tensors.FromShape(args[0].(*tensors.Tensor).Shape()).Size())
			for i := range m {
				m[i] = i%86 <= (i/86/3)%86
			}
			args = append(args, tensors.FromFlatDataAndDimensions(m, c.dims[0]...))
		}
		for _, form := range []string{"fused", "plain"} {
			f := c.fused
			if form == "plain" {
				f = c.plain
			}
			b.Run(c.name+"/"+form, func(b *testing.B) {
				exec := MustNewExec(be, func(in []*Node) []*Node {
					v := in[len(c.dims)-1]
					y := f(in)
					var ps []*Node
					for _, i := range c.wrt {
						ps = append(ps, in[i])
					}
					return append([]*Node{y}, Gradient(ReduceAllSum(Mul(y, v)), ps...)...)
				})
				step := func() {
					for _, o := range exec.MustExec(args...) {
						o.FinalizeAll()
					}
				}
				step() // compiles
				cpu0 := cpuSeconds()
				for b.Loop() {
					step()
				}
				b.ReportMetric((cpuSeconds()-cpu0)*1e3/float64(b.N), "cpu-ms/op")
			})
		}
	}
}
