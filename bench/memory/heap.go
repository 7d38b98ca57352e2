package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// watchHeap samples the live Go heap (as of the last collection) every
// 200 ms and keeps the heap profile of its largest value; stop writes it
// to path and prints the largest live heap. The profile's inuse figures
// are those of the same collection, so they say what held the peak.
func watchHeap(path string, w io.Writer) (stop func()) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var best uint64
	var prof bytes.Buffer
	take := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > best {
			var b bytes.Buffer
			if pprof.Lookup("heap").WriteTo(&b, 0) == nil {
				best, prof = v, b
			}
		}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				take()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		take()
		if err := os.WriteFile(path, prof.Bytes(), 0o644); err != nil {
			fmt.Fprintln(w, "memory: heap profile:", err)
			return
		}
		fmt.Fprintf(w, "largest live Go heap %.2f GB (profile in %s)\n", float64(best)/1e9, path)
	}
}
