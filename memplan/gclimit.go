package memplan

import (
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
)

// minLimitedPeak is the smallest planned peak (without its GC headroom)
// for which LimitGC sets a limit (and Estimate then plans no headroom):
// below it the collector's headroom is small in absolute terms, and a
// limit close to a small live heap (a test process holding other data)
// would make the collector run all the time. Above it, without a limit,
// the heap of a step grows to about twice what it holds, with the
// backend's pooled buffers: SmolLM2-135M's LoRA trajectories with
// gradient checkpointing, planned at 0.75 GB, peaked at 1.6–1.9 GB.
const minLimitedPeak = 512 << 20

// The limit is raised when two collections in a row leave the live heap
// at raiseAt (per mille) of it or more, to where the live heap is raiseTo
// of the new limit; never above availShare (per mille) of the memory
// available. Why: at the limit the collector runs back to back and Go's
// scavenger hands the pages each collection frees back to the system
// (it keeps the heap's mapped memory under 95% of the limit), so the
// next allocations fault them in again. Measured on bench/grpostep
// -variant genheavy (limit 5.86 GB, live heap after its collections
// 5.3-5.85 GB in training): 5-12 collections a second for the
// whole training part, 2.7 M page faults and 30 s of system time a step
// against 0.3 M and 3.5 s with GOMEMLIMIT=20GiB. A run whose plan is
// right (calibrated so that the live heap peaks under about 95% of it)
// keeps its limit and its peak RSS.
const (
	raiseAt = 960
	raiseTo = 800
)

// raisedLimit returns the Go memory limit after a collection that left
// live bytes of heap under limit, and whether it changed: limit while
// live stays under raiseAt of it or limit has reached ceiling; else the
// limit that puts live at raiseTo of it, at most ceiling.
func raisedLimit(live, limit, ceiling int64) (int64, bool) {
	if live/raiseAt*1000 < limit || limit >= ceiling {
		return limit, false
	}
	n := min(live/raiseTo*1000, ceiling)
	return n, n > limit
}

// GCLimit is a run's Go memory limit (LimitGC): it checks the live heap
// after every collection and raises the limit when the run needs more
// than planned (raisedLimit), noting the change for the progress output.
// Its methods are safe on a nil *GCLimit (a run without a limit).
type GCLimit struct {
	mu      sync.Mutex
	limit   int64 // the limit in force, set by the watch
	ceiling int64
	prev    int64 // the limit before the run
	stopped bool
	high    int // consecutive collections that left the live heap at raiseAt or more
	seen    int // collections seen (tests)
	notes   []raise
}

// raise is a raise of the limit, for Report.
type raise struct{ from, to, live int64 }

// gcSentinel is garbage whose finalizer tells the watch that a collection
// ran. It holds a pointer so that it is never tiny-allocated (tiny objects
// share blocks, and their finalizers may not run).
type gcSentinel struct{ p *GCLimit }

// arm leaves a new sentinel to the next collection.
func (g *GCLimit) arm() {
	runtime.SetFinalizer(&gcSentinel{g}, func(s *gcSentinel) { s.p.collected() })
}

// collected runs after a collection (on the finalizer goroutine).
func (g *GCLimit) collected() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	g.seen++
	if debug.SetMemoryLimit(-1) != g.limit {
		g.stopped = true // the program set its own: leave it alone
		return
	}
	live := liveHeap()
	if n, ok := g.observe(live); ok {
		debug.SetMemoryLimit(n)
		g.notes = append(g.notes, raise{from: g.limit, to: n, live: live})
		g.limit = n
	}
	g.arm()
}

// observe takes a collection that left live bytes of heap and returns
// the new limit when it is to be raised: after two collections in a row
// for which raisedLimit raises it (the first may still count garbage in
// the buffer pools as live: sync.Pool empties over two collections).
func (g *GCLimit) observe(live int64) (int64, bool) {
	n, ok := raisedLimit(live, g.limit, g.ceiling)
	if !ok {
		g.high = 0
		return g.limit, false
	}
	if g.high++; g.high < 2 {
		return g.limit, false
	}
	g.high = 0
	return n, true
}

// Report logs the limits raised since the last report (level Info; nil
// logger: slog.Default()).
func (g *GCLimit) Report(logger *slog.Logger) {
	if g == nil {
		return
	}
	g.mu.Lock()
	notes := g.notes
	g.notes = nil
	g.mu.Unlock()
	if len(notes) > 0 && logger == nil {
		logger = slog.Default()
	}
	for _, n := range notes {
		logger.Info("memplan: Go memory limit raised: the live heap after a collection needs more than the memory plan, and at the limit the collector runs back to back (GOMEMLIMIT sets a fixed limit)",
			"from", FormatBytes(n.from), "to", FormatBytes(n.to), "live_heap", FormatBytes(n.live))
	}
}

// Restore stops the watch, returns the run's garbage to the system and
// restores the limit from before the run.
func (g *GCLimit) Restore() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	// Hand the run's garbage back before the limit goes (twice: the
	// buffer pools empty over two collections).
	debug.FreeOSMemory()
	debug.FreeOSMemory()
	debug.SetMemoryLimit(g.prev)
}

// liveHeap returns the bytes of heap objects the last collection marked.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// LimitGC sets Go's process-wide memory limit (debug.SetMemoryLimit) for a training
// run (gcLimit: the memory plan's peak without the collector's headroom it
// counts, raised by what the process held before the run beyond the
// plan's weights), which the returned watch raises when the run turns out
// to need more (raisedLimit), up to 95% of avail (the memory available,
// when known) and restores when the run ends (GCLimit.Restore).
//
// Why: a step allocates and frees gigabytes of activations; with GOGC=100
// alone the heap may grow to twice what is live before a collection, and
// freed pages stay resident, so the peak RSS could double what the plan
// counts. With a limit the collector runs, and returns memory to the
// system, before the heap passes it. A limit set by the user — GOMEMLIMIT,
// or debug.SetMemoryLimit in the program — is honoured: nothing changes
// (nil watch). The limit set is logged to logger (level Info; nil:
// slog.Default()).
func LimitGC(logger *slog.Logger, plan Plan, avail int64) *GCLimit {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok || plan.Peak-plan.gcSlack() < minLimitedPeak {
		return nil
	}
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return nil // the program set one
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// The plan's garbage-collector headroom is what the limit removes.
	limit := gcLimit(plan.Peak-plan.gcSlack(), plan.resident(), int64(ms.Sys-ms.HeapIdle), avail)
	g := &GCLimit{limit: limit, ceiling: limitCeiling(limit, avail)}
	g.prev = debug.SetMemoryLimit(limit)
	if logger == nil {
		logger = slog.Default()
	}
	logger.Info("memplan: Go memory limit for this run: the memory plan without its GC headroom, raised up to the ceiling if the run needs more (GOMEMLIMIT overrides)",
		"limit", FormatBytes(limit), "ceiling", FormatBytes(g.ceiling))
	g.arm()
	return g
}

// Enforce applies plan to a run: it prints the plan to w (nil: nowhere)
// with budget's figure, returns an *OutOfMemoryError when the plan's peak
// exceeds the budget (unless budget.Off), and with gcLimit sets the plan
// as Go's memory limit for the run (LimitGC; nil when it sets none).
func Enforce(w io.Writer, logger *slog.Logger, plan Plan, budget Budget, gcLimit bool) (*GCLimit, error) {
	if w != nil {
		plan.Format(w, budget.Bytes, budget.Source)
	}
	if !budget.Off {
		if err := plan.Check(budget.Bytes, budget.Source); err != nil {
			return nil, err
		}
	}
	if !gcLimit {
		return nil, nil
	}
	return LimitGC(logger, plan, budget.Bytes), nil
}

// limitCeiling is how far a run's limit may be raised: 95% of the memory
// available, or twice the limit when that is unknown; never below the
// limit.
func limitCeiling(limit, avail int64) int64 {
	if avail <= 0 {
		return 2 * limit
	}
	return max(limit, avail-avail/20)
}

// gcSlack returns the garbage collector's headroom the plan counts: its
// "Go runtime and GC" item beyond the runtime itself.
func (p Plan) gcSlack() int64 {
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
func (p Plan) resident() int64 {
	n := int64(runtimeBase)
	for _, it := range p.Items {
		if strings.HasPrefix(it.Name, "weights") || it.Name == "LoRA master weights" || it.Name == "reference model" {
			n += it.Bytes
		}
	}
	return n
}
