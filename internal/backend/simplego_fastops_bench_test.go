package backend

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// benchOp times the executor SimpleGo runs for op (the hook's unless
// GRPOKIT_FASTOPS=off) on float32 operands of the given dimensions;
// compare with
//
//	GRPOKIT_FASTOPS=off go test -run NONE -bench FastOps ./internal/backend
//	go test -run NONE -bench FastOps ./internal/backend
func benchOp(bb *testing.B, op backends.OpType, outDims []int, data any, inDims ...[]int) {
	be, err := New("go")
	if err != nil {
		bb.Fatal(err)
	}
	b := be.(*simplego.Backend)
	r := rand.New(rand.NewPCG(1, 1))
	inputs := make([]*simplego.Buffer, len(inDims))
	for i, d := range inDims {
		inputs[i] = f32Buffer(bb, b, randomF32(r, size(d), true), d)
	}
	node := fakeNode(op, shapes.Make(dtypes.Float32, outDims...), data)
	owned := make([]bool, len(inputs))
	args := make([]*simplego.Buffer, len(inputs))
	exec := nodeExecutors[op]
	elems := max(size(outDims), size(inDims[0])) // per element of the larger side
	bb.SetBytes(int64(4 * elems))
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
	bb.ReportMetric(float64(bb.Elapsed().Nanoseconds())/float64(bb.N*elems), "ns/elem")
}

func BenchmarkFastOpsMulBroadcast(b *testing.B) { // [16,11,64]·[16,11,1]
	benchOp(b, backends.OpTypeMul, []int{16, 11, 64}, nil, []int{16, 11, 64}, []int{16, 11, 1})
}

func BenchmarkFastOpsAddOuter(b *testing.B) { // [16,11,1]+[1,1,64]
	benchOp(b, backends.OpTypeAdd, []int{16, 11, 64}, nil, []int{16, 11, 1}, []int{1, 1, 64})
}

func BenchmarkFastOpsBroadcastInDim(b *testing.B) { // [16,11] -> [16,11,64]
	benchOp(b, backends.OpTypeBroadcastInDim, []int{16, 11, 64}, []int{0, 1}, []int{16, 11})
}

func BenchmarkFastOpsReduceSumLast(b *testing.B) { // [16,11,64] over axis 2
	benchOp(b, backends.OpTypeReduceSum, []int{16, 11}, []int{2}, []int{16, 11, 64})
}

func BenchmarkFastOpsReduceMaxLast(b *testing.B) { // [16,11,64] over axis 2
	benchOp(b, backends.OpTypeReduceMax, []int{16, 11}, []int{2}, []int{16, 11, 64})
}

func BenchmarkFastOpsTransposeHeads(b *testing.B) { // [16,11,4,16] -> [16,4,11,16]
	benchOp(b, backends.OpTypeTranspose, []int{16, 4, 11, 16}, []int{0, 2, 1, 3}, []int{16, 11, 4, 16})
}

func BenchmarkFastOpsMulSameShape(b *testing.B) { // SimpleGo's own loop either way
	benchOp(b, backends.OpTypeMul, []int{16, 11, 576}, nil, []int{16, 11, 576}, []int{16, 11, 576})
}

func BenchmarkFastOpsMulScalar(b *testing.B) { // SimpleGo's own loop either way
	benchOp(b, backends.OpTypeMul, []int{16, 11, 576}, nil, []int{16, 11, 576}, []int{1, 1, 1})
}
