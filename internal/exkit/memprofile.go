package exkit

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"
)

// peakProfiler writes a heap profile whenever the live heap after a
// collection passes the largest seen so far (by 2%), so that the file holds
// the allocations of the run's largest live heap when the run ends.
type peakProfiler struct {
	path string
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
	err  error
}

// startPeakProfile starts sampling the live heap (/gc/heap/live:bytes)
// every interval; writes go to path through a temporary file.
func startPeakProfile(path string, interval time.Duration) *peakProfiler {
	p := &peakProfiler{path: path, stop: make(chan struct{})}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(sample)
			if live := sample[0].Value.Uint64(); live > p.peak+p.peak/50 && p.err == nil {
				// The heap profile lags the collector by up to two
				// cycles; a collection now makes it current.
				runtime.GC()
				p.peak = live
				p.err = p.write()
			}
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// write writes the heap profile (as of the last collection) to p.path.
func (p *peakProfiler) write() error {
	tmp := p.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, p.path)
}

// Stop ends the sampling and reports the peak and any write error.
func (p *peakProfiler) Stop() error {
	close(p.stop)
	p.done.Wait()
	if p.err != nil {
		return fmt.Errorf("memprofile: %w", p.err)
	}
	fmt.Fprintf(os.Stderr, "memprofile: %s: heap profile at the largest live heap, %.2f GB\n", p.path, float64(p.peak)/1e9)
	return nil
}
