package backend

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math.
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

func TestGivesParallelism(t *testing.T) {
	for _, tc := range []struct {
		config string
		want   bool
	}{
		{"go", false},
		{"go:ops_parallel", false},
		{"go:ops_sequential", false},
		{"go:parallelism=2", true},
		{"go:ops_parallel,parallelism=-1", true},
	} {
		if got := givesParallelism(tc.config); got != tc.want {
			t.Errorf("givesParallelism(%q) = %v, want %v", tc.config, got, tc.want)
		}
	}
}

// wideGraph has several independent products and element-wise chains, so
// the parallel executor runs them side by side: float64 products and Erf
// run on SimpleGo's own executors, which split their work over its worker
// pool from inside a worker (what hung on 2 cores with a bounded pool),
// float32 products and arithmetic on grpokit's hooks.
func wideGraph(x64, x32 *Node) (*Node, *Node) {
	var s64, s32 *Node
	for i := range 6 {
		p := Dot(x64, AddScalar(x64, float64(i)))
		e := Erf(MulScalar(x64, 0.01*float64(i+1)))
		q := Add(ReduceAllSum(p), ReduceAllSum(e))
		if s64 == nil {
			s64 = q
		} else {
			s64 = Add(s64, q)
		}
		r := Dot(x32, Sigmoid(AddScalar(x32, float32(i))))
		r = Mul(r, Exp(MulScalar(x32, 0.001)))
		if s32 == nil {
			s32 = r
		} else {
			s32 = Add(s32, r)
		}
	}
	return s64, s32
}

func wideInputs(n int) ([][]float64, [][]float32) {
	a, b := make([][]float64, n), make([][]float32, n)
	for i := range n {
		a[i], b[i] = make([]float64, n), make([]float32, n)
		for j := range n {
			v := float64((i*7+j*13)%17)/17 - 0.5
			a[i][j], b[i][j] = v, float32(v)
		}
	}
	return a, b
}

// runWide executes wideGraph on the backend of config and returns its
// outputs, failing the test if it does not finish within the limit.
func runWide(t *testing.T, config string, x64 [][]float64, x32 [][]float32) (float64, []float32) {
	t.Helper()
	b, err := New(config)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		s64 float64
		s32 []float32
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r.err = fmt.Errorf("panic: %v", p)
			}
			done <- r
		}()
		exec := MustNewExec(b, wideGraph)
		for range 5 { // repeated runs give the scheduler more chances to interleave
			outs := exec.MustExec(x64, x32)
			r.s64 = tensors.ToScalar[float64](outs[0])
			r.s32 = tensors.MustCopyFlatData[float32](outs[1])
		}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("%s: %v", config, r.err)
		}
		return r.s64, r.s32
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: wide graph did not finish in 60 s (deadlock?)", config)
	}
	return 0, nil
}

// TestParallelOpsFinish runs a graph with many independent ops under
// SimpleGo's parallel op execution on 1 and 2 cores: it must finish (a
// bounded worker pool hung here on 2 cores) and give the same results bit
// for bit as one op at a time.
func TestParallelOpsFinish(t *testing.T) {
	x64, x32 := wideInputs(96)
	want64, want32 := runWide(t, "go:ops_sequential", x64, x32)
	for _, procs := range []int{2, 1} {
		prev := runtime.GOMAXPROCS(procs)
		for _, config := range []string{"go:ops_parallel", "go"} {
			got64, got32 := runWide(t, config, x64, x32)
			if math.Float64bits(got64) != math.Float64bits(want64) && math.Abs(got64-want64) > 1e-9*math.Abs(want64) {
				t.Errorf("GOMAXPROCS=%d %s: float64 sum %v, sequential %v", procs, config, got64, want64)
			}
			for i := range want32 {
				if math.Float32bits(got32[i]) != math.Float32bits(want32[i]) {
					t.Fatalf("GOMAXPROCS=%d %s: float32 output [%d] = %v, sequential %v (must match bit for bit)", procs, config, i, got32[i], want32[i])
				}
			}
			b, _ := New(config)
			if !workersUnlimited(b) {
				t.Errorf("%s: worker pool not unlimited", config)
			}
		}
		runtime.GOMAXPROCS(prev)
	}
}
