package fork

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunEachTaskOnce checks that every task of every loop runs exactly
// once, for loops of many sizes posted back to back, from several
// goroutines at once and from inside other loops' tasks.
func TestRunEachTaskOnce(t *testing.T) {
	tests := []struct {
		name    string
		callers int
		nested  bool
	}{
		{"one caller", 1, false},
		{"eight callers", 8, false},
		{"nested", 1, true},
		{"nested, four callers", 4, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p pool
			var wg sync.WaitGroup
			errs := make(chan string, tc.callers)
			for c := 0; c < tc.callers; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := 0; n <= 9; n++ {
						for rep := 0; rep < 50; rep++ {
							counts := make([]atomic.Int32, n)
							var inner atomic.Int32
							p.run(n, func(i int) {
								counts[i].Add(1)
								if tc.nested {
									p.run(3, func(int) { inner.Add(1) })
								}
							})
							for i := range counts {
								if got := counts[i].Load(); got != 1 {
									errs <- "a task ran other than once"
									return
								}
							}
							if tc.nested && inner.Load() != int32(3*n) {
								errs <- "a nested loop lost tasks"
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Fatal(e)
			}
		})
	}
}

// TestRunWaitsForSlowTasks checks that Run returns only after a task that
// outlasts the caller's spin has finished.
func TestRunWaitsForSlowTasks(t *testing.T) {
	var p pool
	for rep := 0; rep < 20; rep++ {
		var done atomic.Int32
		p.run(2, func(i int) {
			if i == 1 {
				time.Sleep(3 * Linger)
			}
			done.Add(1)
		})
		if done.Load() != 2 {
			t.Fatalf("Run returned with %d of 2 tasks done", done.Load())
		}
	}
}

// TestHelpersExit checks that helpers stop once no work comes for Linger,
// so an idle process keeps no spinning goroutines.
func TestHelpersExit(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("helpers start only with GOMAXPROCS ≥ 2")
	}
	var p pool
	for rep := 0; rep < 100; rep++ {
		p.run(runtime.GOMAXPROCS(0), func(int) {})
	}
	if h := p.helpers.Load(); h > int32(runtime.GOMAXPROCS(0)-1) {
		t.Fatalf("%d helpers live, more than GOMAXPROCS-1", h)
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.helpers.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d helpers still live 5 s after the last loop", p.helpers.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if i := p.idle.Load(); i != 0 {
		t.Fatalf("idle count %d after every helper exited", i)
	}
}

// TestSingleProc checks that with one P no helper starts and the caller
// runs every task in order.
func TestSingleProc(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var p pool
	var order []int
	p.run(5, func(i int) { order = append(order, i) })
	if len(order) != 5 || p.helpers.Load() != 0 {
		t.Fatalf("ran %v with %d helpers, want 0..4 on the caller alone", order, p.helpers.Load())
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("ran %v, want 0..4 in order", order)
		}
	}
}

// BenchmarkRun times a two-way loop of tiny tasks: the fork/join overhead.
func BenchmarkRun(b *testing.B) {
	var p pool
	var sink atomic.Int64
	for b.Loop() {
		p.run(2, func(i int) { sink.Add(int64(i)) })
	}
}

// BenchmarkGoroutines times the same loop with a goroutine per task and a
// WaitGroup, the way it was done before.
func BenchmarkGoroutines(b *testing.B) {
	var sink atomic.Int64
	for b.Loop() {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			sink.Add(1)
		}()
		sink.Add(0)
		wg.Wait()
	}
}

// spin burns about d of CPU time without sleeping.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// The decode step's pattern: 100 µs tasks split two ways, with 30 µs of
// serial work on the caller between loops (the other core goes idle).
const taskTime, gapTime = 100 * time.Microsecond, 30 * time.Microsecond

// BenchmarkRunWithGaps times the pattern on helpers.
func BenchmarkRunWithGaps(b *testing.B) {
	var p pool
	for b.Loop() {
		spin(gapTime)
		p.run(2, func(int) { spin(taskTime) })
	}
}

// BenchmarkGoroutinesWithGaps times the pattern with a goroutine per task.
func BenchmarkGoroutinesWithGaps(b *testing.B) {
	for b.Loop() {
		spin(gapTime)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			spin(taskTime)
		}()
		spin(taskTime)
		wg.Wait()
	}
}
