package main

import (
	"strings"
	"testing"
	"time"
)

const traces = `File: grpostep
Type: cpu
Duration: 10s, Total samples = 1.50s (15.00%)
-----------+-------------------------------------------------------
     1.20s   github.com/grpokit/grpokit/internal/gemm.kernAVX512_12
             github.com/grpokit/grpokit/internal/gemm.Gemm
             github.com/gomlx/gomlx/backends/simplego.(*Executable).Execute
-----------+-------------------------------------------------------
     200ms   runtime.memmove
             github.com/gomlx/gomlx/pkg/core/graph.(*Exec).createAndCacheGraph
-----------+-------------------------------------------------------
      80ms   github.com/grpokit/grpokit/internal/vec32.mulVVAVX2
             github.com/grpokit/grpokit/internal/backend.flatBinary
-----------+-------------------------------------------------------
      20ms   runtime.futex
-----------+-------------------------------------------------------
      30ms   github.com/grpokit/grpokit/internal/backend.maxRun
             github.com/grpokit/grpokit/internal/backend.softmaxRows
             github.com/grpokit/grpokit/internal/backend.runFused.func1
             github.com/grpokit/grpokit/internal/backend.runFused
-----------+-------------------------------------------------------
      10ms   runtime.mallocgc
             github.com/grpokit/grpokit/internal/backend.runFused
-----------+-------------------------------------------------------
`

func TestParseAndClassify(t *testing.T) {
	ss, err := parseTraces(strings.NewReader(traces))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		d      time.Duration
		family string
		depth  int
	}{
		{1200 * time.Millisecond, "gemm (matrix products)", 3},
		{200 * time.Millisecond, "compile (graph building, gradient, backend program)", 2},
		{80 * time.Millisecond, "element-wise (incl. broadcast, fused chains)", 2},
		{20 * time.Millisecond, "other", 1},
		{30 * time.Millisecond, "element-wise (incl. broadcast, fused chains)", 4}, // not reductions
		{10 * time.Millisecond, "memory (alloc, clear, GC)", 2},
	}
	if len(ss) != len(want) {
		t.Fatalf("got %d samples, want %d: %+v", len(ss), len(want), ss)
	}
	for i, w := range want {
		if ss[i].d != w.d || len(ss[i].frames) != w.depth || classify(ss[i].frames) != w.family {
			t.Errorf("sample %d: %v, %d frames, %q; want %v, %d, %q", i, ss[i].d, len(ss[i].frames), classify(ss[i].frames), w.d, w.depth, w.family)
		}
	}
	if _, err := parseTraces(strings.NewReader("File: x\n")); err == nil {
		t.Error("a profile without samples gave no error")
	}
}
