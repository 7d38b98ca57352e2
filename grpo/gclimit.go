package grpo

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// minLimitedPeak is the smallest planned peak (without its GC headroom)
// for which limitGC sets a limit (and PlanMemory then plans no headroom):
// below it the collector's headroom is small in absolute terms, and a
// limit close to a small live heap (a test process holding other data)
// would make the collector run all the time.
const minLimitedPeak = 1 << 30

// limitGC gives Go's garbage collector a soft memory limit for a training
// run (gcLimit: the memory plan's peak without the collector's headroom it
// counts, raised by what the process held before the run beyond the
// plan's weights) and returns the function that returns the run's garbage
// to the system and restores the previous limit.
//
// Why: a step allocates and frees gigabytes of activations; with GOGC=100
// alone the heap may grow to twice what is live before a collection, and
// freed pages stay resident, so the peak RSS could double what the plan
// counts. With a limit the collector runs, and returns memory to the
// system, before the heap passes it. A limit set by the user — GOMEMLIMIT,
// or debug.SetMemoryLimit in the program — is honoured: nothing changes.
func limitGC(w io.Writer, plan MemoryPlan, avail int64) (restore func()) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok || plan.Peak-plan.gcSlack() < minLimitedPeak {
		return func() {}
	}
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return func() {} // the program set one
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// The plan's garbage-collector headroom is what the limit removes.
	limit := gcLimit(plan.Peak-plan.gcSlack(), plan.resident(), int64(ms.Sys-ms.HeapIdle), avail)
	prev := debug.SetMemoryLimit(limit)
	fmt.Fprintf(w, "grpo: Go memory limit %s for this run (the memory plan without its GC headroom; GOMEMLIMIT overrides)\n", FormatBytes(limit))
	return func() {
		// Hand the run's garbage back before the limit goes (twice: the
		// buffer pools empty over two collections).
		debug.FreeOSMemory()
		debug.FreeOSMemory()
		debug.SetMemoryLimit(prev)
	}
}

// gcSlack returns the garbage collector's headroom the plan counts: its
// "Go runtime and GC" item beyond the runtime itself.
func (p MemoryPlan) gcSlack() int64 {
	for _, it := range p.Items {
		if it.Name == "Go runtime and GC" {
			return max(0, it.Bytes-runtimeBase)
		}
	}
	return 0
}

// gcLimit is the memory limit of a run planned to peak at peak bytes, of
// which resident (weights, runtime) are held before it starts, in a
// process that uses inUse bytes when it starts: the plan's peak, or more
// when the process holds more than the plan's resident part; at most avail
// when avail > 0.
func gcLimit(peak, resident, inUse, avail int64) int64 {
	limit := max(peak, inUse+peak-resident)
	if avail > 0 {
		limit = min(limit, avail)
	}
	return limit
}

// resident returns what the plan counts as held before step 0: the
// weights (and LoRA masters, and a reference copy) and the Go runtime.
func (p MemoryPlan) resident() int64 {
	n := int64(runtimeBase)
	for _, it := range p.Items {
		if strings.HasPrefix(it.Name, "weights") || it.Name == "LoRA master weights" || it.Name == "reference model" {
			n += it.Bytes
		}
	}
	return n
}
