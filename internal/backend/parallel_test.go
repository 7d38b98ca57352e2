package backend

import (
	"sync"
	"testing"
)

// TestParallelFor checks that the chunks cover [0, n) once, are aligned,
// and that small work stays on one chunk.
func TestParallelFor(t *testing.T) {
	defer func(w, th int) { parallelMinWork, parallelThreads = w, th }(parallelMinWork, parallelThreads)
	for _, tc := range []struct{ n, work, align, threads, minWork, wantChunks int }{
		{1000, 1000, 64, 3, 1, 3},
		{1000, 1000, 64, 2, 1000, 1}, // work below 2·minWork: one chunk
		{1000, 2000, 64, 2, 1000, 2},
		{5, 5, 1, 8, 1, 5}, // no more chunks than items
		{130, 130, 64, 3, 1, 3},
		{1, 100, 1, 4, 1, 1},
		{0, 0, 1, 4, 1, 1},
	} {
		parallelMinWork, parallelThreads = tc.minWork, tc.threads
		var mu sync.Mutex
		seen := make([]int, tc.n)
		chunks := 0
		parallelFor(tc.n, tc.work, tc.align, func(lo, hi int) {
			mu.Lock()
			defer mu.Unlock()
			chunks++
			if lo%tc.align != 0 {
				t.Errorf("%+v: chunk [%d, %d) not aligned", tc, lo, hi)
			}
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("%+v: index %d visited %d times", tc, i, c)
			}
		}
		if chunks > tc.wantChunks || tc.wantChunks == 1 && chunks != 1 {
			t.Errorf("%+v: %d chunks, want %d", tc, chunks, tc.wantChunks)
		}
	}
}

// TestExecutorsInParallel reruns the executor tests (odd sizes, every
// broadcast pattern, reductions, transposes, DotGeneral operand copies)
// with every op split across 3 goroutines however small: results must
// stay bit-identical to the references.
func TestExecutorsInParallel(t *testing.T) {
	defer func(w, th int) { parallelMinWork, parallelThreads = w, th }(parallelMinWork, parallelThreads)
	parallelMinWork, parallelThreads = 1, 3
	for name, test := range map[string]func(*testing.T){
		"BroadcastBinary": TestBroadcastBinaryExecutor,
		"BroadcastInDim":  TestBroadcastInDimExecutor,
		"BroadcastEqual":  TestBroadcastEqualExecutor,
		"FlatBinary":      TestFlatBinaryExecutor,
		"Unary":           TestUnaryExecutor,
		"Where":           TestWhereExecutor,
		"Reduce":          TestReduceExecutor,
		"Transpose":       TestTransposeExecutor,
		"FastOpsGraph":    TestFastOpsThroughGraph,
		"FlatOpsGraph":    TestFlatOpsThroughGraph,
		"DotGeneral":      TestDotGeneralThroughGraph,
	} {
		t.Run(name, test)
	}
}
