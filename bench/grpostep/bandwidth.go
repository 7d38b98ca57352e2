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

// readBandwidth measures the streaming-read bandwidth in bytes per second
// with workers goroutines summing disjoint parts of a buffer of n bytes
// (far beyond the caches) as 64-bit words, eight independent sums each;
// best of 5. A decode step reads its weights this way.
func readBandwidth(n, workers int) float64 {
	buf := make([]uint64, n/8)
	for i := range buf {
		buf[i] = uint64(i)
	}
	sums := make([]uint64, workers*8) // a cache line apart
	best := time.Duration(1 << 62)
	for range 5 {
		t0 := time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			part := buf[w*len(buf)/workers : (w+1)*len(buf)/workers]
			wg.Go(func() { sums[w*8] = sumWords(part) })
		}
		wg.Wait()
		best = min(best, time.Since(t0))
	}
	return float64(8*len(buf)) / best.Seconds()
}

// sumWords adds the words of x in eight running sums (independent loads,
// so one core's loop is limited by memory, not by the adds).
func sumWords(x []uint64) uint64 {
	var s0, s1, s2, s3, s4, s5, s6, s7 uint64
	for len(x) >= 8 {
		s0 += x[0]
		s1 += x[1]
		s2 += x[2]
		s3 += x[3]
		s4 += x[4]
		s5 += x[5]
		s6 += x[6]
		s7 += x[7]
		x = x[8:]
	}
	for _, v := range x {
		s0 += v
	}
	return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
}
