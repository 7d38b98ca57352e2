package main

import (
	"runtime"
	"sync"
	"time"
)

// bandwidth measures the machine's memory bandwidth in bytes per second
// the way STREAM's copy does: GOMAXPROCS goroutines copy disjoint parts of
// an array of n float32s into another (256 MB each for n = 64<<20, far
// beyond the caches), counting the bytes read and written; best of 5.
func bandwidth(n int) float64 {
	src, dst := make([]float32, n), make([]float32, n)
	for i := range src {
		src[i] = float32(i)
	}
	copy(dst, src) // fault both arrays in
	workers := runtime.GOMAXPROCS(0)
	best := time.Duration(1 << 62)
	for range 5 {
		t0 := time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			lo, hi := w*n/workers, (w+1)*n/workers
			wg.Add(1)
			go func() {
				defer wg.Done()
				copy(dst[lo:hi], src[lo:hi])
			}()
		}
		wg.Wait()
		best = min(best, time.Since(t0))
	}
	return 2 * 4 * float64(n) / best.Seconds()
}
