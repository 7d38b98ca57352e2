package backend

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// flatBenchDims are the poker example's sizes (MLP activations of a
// 128-sequence batch, an attention tensor) and 1M floats.
var flatBenchDims = [][]int{{16, 11, 64}, {128, 14, 256}, {1 << 20}}

// BenchmarkFlatOps times same-shape and scalar binary ops, Exp and
// Logistic on the executor SimpleGo runs; compare with
//
//	GRPOKIT_FASTOPS=off go test -run NONE -bench FlatOps ./internal/backend
//	go test -run NONE -bench FlatOps ./internal/backend
func BenchmarkFlatOps(b *testing.B) {
	for _, d := range flatBenchDims {
		name := fmt.Sprint(d)
		for _, op := range []backends.OpType{backends.OpTypeAdd, backends.OpTypeSub, backends.OpTypeMul, backends.OpTypeDiv} {
			b.Run(fmt.Sprintf("%s/%s", op, name), func(b *testing.B) { benchOp(b, op, d, nil, d, d) })
			b.Run(fmt.Sprintf("%sScalar/%s", op, name), func(b *testing.B) { benchOp(b, op, d, nil, d, []int{}) })
		}
		b.Run(fmt.Sprintf("Where/%s", name), func(b *testing.B) { benchWhere(b, d) })
		for _, op := range []backends.OpType{backends.OpTypeExp, backends.OpTypeLogistic} {
			b.Run(fmt.Sprintf("%s/%s", op, name), func(b *testing.B) { benchOp(b, op, d, nil, d) })
		}
	}
}

// benchWhere times Where with a random condition and two vector branches.
func benchWhere(bb *testing.B, dims []int) {
	be, err := New("go")
	if err != nil {
		bb.Fatal(err)
	}
	b := be.(*simplego.Backend)
	r := rand.New(rand.NewPCG(1, 1))
	n := size(dims)
	cond := make([]bool, n)
	for i := range cond {
		cond[i] = r.IntN(2) == 0
	}
	cb, err := b.BufferFromFlatData(0, cond, shapes.Make(dtypes.Bool, dims...))
	if err != nil {
		bb.Fatal(err)
	}
	inputs := []*simplego.Buffer{cb.(*simplego.Buffer), f32Buffer(bb, b, randomF32(r, n, false), dims), f32Buffer(bb, b, randomF32(r, n, false), dims)}
	node := fakeNode(backends.OpTypeWhere, shapes.Make(dtypes.Float32, dims...), nil)
	args, owned := make([]*simplego.Buffer, 3), make([]bool, 3)
	exec := nodeExecutors[backends.OpTypeWhere]
	bb.SetBytes(int64(4 * n))
	bb.ResetTimer()
	for range bb.N {
		copy(args, inputs)
		out, err := exec(b, node, args, owned)
		if err != nil {
			bb.Fatal(err)
		}
		if err := b.BufferFinalize(out); err != nil {
			bb.Fatal(err)
		}
	}
	bb.ReportMetric(float64(bb.Elapsed().Nanoseconds())/float64(bb.N*n), "ns/elem")
}
