package memplan

import (
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/grpokit/grpokit/model"
)

const gib = 1 << 30

// TestGCLimit: the plan's peak, raised by what the process holds beyond the
// plan's resident part, capped by the memory available.
func TestGCLimit(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		peak, resident, inUse, avail int64
		want                         int64
	}{
		{"the plan's peak", 3 * gib, gib, gib, 20 * gib, 3 * gib},
		{"more held than planned", 3 * gib, gib, 2 * gib, 20 * gib, 4 * gib},
		{"capped by the memory available", 30 * gib, gib, gib, 20 * gib, 20 * gib},
		{"no available figure", 3 * gib, gib, gib, 0, 3 * gib},
	} {
		if got := gcLimit(tc.peak, tc.resident, tc.inUse, tc.avail); got != tc.want {
			t.Errorf("%s: gcLimit = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestRaisedLimit: a limit stays while the live heap stays under 96% of
// it, else it grows to put the live heap at 80% of it, never past the
// ceiling.
func TestRaisedLimit(t *testing.T) {
	const mb = 1_000_000
	for _, tc := range []struct {
		name                 string
		live, limit, ceiling int64
		want                 int64
		raised               bool
	}{
		{"well under the limit", 500 * mb, 1000 * mb, 8000 * mb, 1000 * mb, false},
		{"just under 96%", 960*mb - 1, 1000 * mb, 8000 * mb, 1000 * mb, false},
		{"at 96%: live at 80%", 960 * mb, 1000 * mb, 8000 * mb, 1200 * mb, true},
		{"over the limit: live at 80%", 1500 * mb, 1000 * mb, 8000 * mb, 1875 * mb, true},
		{"capped by the ceiling", 1500 * mb, 1000 * mb, 1700 * mb, 1700 * mb, true},
		{"at the ceiling already", 1500 * mb, 1000 * mb, 1000 * mb, 1000 * mb, false},
		{"ceiling below the limit", 1500 * mb, 1000 * mb, 900 * mb, 1000 * mb, false},
	} {
		got, raised := raisedLimit(tc.live, tc.limit, tc.ceiling)
		if got != tc.want || raised != tc.raised {
			t.Errorf("%s: raisedLimit(%d, %d, %d) = %d, %v; want %d, %v", tc.name, tc.live, tc.limit, tc.ceiling, got, raised, tc.want, tc.raised)
		}
	}
}

// TestLimitCeiling: 95% of the memory available, twice the limit when
// that is unknown, never below the limit.
func TestLimitCeiling(t *testing.T) {
	for _, tc := range []struct{ limit, avail, want int64 }{
		{4 * gib, 20 * gib, 19 * gib},
		{4 * gib, 0, 8 * gib},
		{4 * gib, 4 * gib, 4 * gib},
	} {
		if got := limitCeiling(tc.limit, tc.avail); got != tc.want {
			t.Errorf("limitCeiling(%d, %d) = %d, want %d", tc.limit, tc.avail, got, tc.want)
		}
	}
}

// TestGCWatchObserve: the limit is raised after two collections in a
// row at 96% of it or more, not after one, and the count starts again
// after a collection under it.
func TestGCWatchObserve(t *testing.T) {
	const mb = 1_000_000
	g := &GCLimit{limit: 1000 * mb, ceiling: 8000 * mb}
	for i, c := range []struct {
		live   int64
		want   int64
		raised bool
	}{
		{990 * mb, 1000 * mb, false},  // one at the limit
		{900 * mb, 1000 * mb, false},  // under it: the count restarts
		{980 * mb, 1000 * mb, false},  // one
		{1000 * mb, 1250 * mb, true},  // two in a row: live at 80%
		{1100 * mb, 1250 * mb, false}, // the count restarts after a raise
	} {
		n, ok := g.observe(c.live)
		if n != c.want || ok != c.raised {
			t.Fatalf("collection %d (live %d): observe = %d, %v; want %d, %v", i, c.live, n, ok, c.want, c.raised)
		}
		if ok {
			g.limit = n
		}
	}
}

// TestGCWatchRaises: in a process whose live heap sits at its limit, the
// watch raises the limit after collections and notes it for the progress
// output; under its limit a run keeps it; a limit the program sets during
// the run is left alone.
func TestGCWatchRaises(t *testing.T) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		t.Skip("GOMEMLIMIT is set for the test process")
	}
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	hold := make([]byte, 64<<20) // live
	for i := range hold {
		hold[i] = byte(i)
	}
	runtime.GC()
	live := liveHeap()
	if live < 64<<20 {
		t.Fatalf("live heap %d after holding 64 MiB", live)
	}
	// waitFor collects until cond holds (the watch sees collections on the
	// finalizer goroutine) or 30 s have passed (a loaded CI machine).
	waitFor := func(g *GCLimit, cond func() bool) bool {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			runtime.GC()
			time.Sleep(time.Millisecond)
			g.mu.Lock()
			ok := cond()
			g.mu.Unlock()
			if ok {
				return true
			}
		}
		return false
	}
	start := func(limit int64) *GCLimit {
		g := &GCLimit{limit: limit, ceiling: 8 * limit}
		g.prev = debug.SetMemoryLimit(limit)
		g.arm()
		return g
	}

	// The live heap at the limit: raised.
	g := start(live)
	if !waitFor(g, func() bool { return g.limit != live }) {
		t.Fatalf("limit %d not raised with the live heap (%d) at it", debug.SetMemoryLimit(-1), live)
	}
	if got := debug.SetMemoryLimit(-1); got < live+live/5 || got > 8*live {
		t.Errorf("limit %d after collections at the limit %d, want 1.25× the live heap", got, live)
	}
	var b strings.Builder
	log := slog.New(slog.NewTextHandler(&b, nil))
	g.Report(log)
	if !strings.Contains(b.String(), "Go memory limit raised") || !strings.Contains(b.String(), "from=") {
		t.Errorf("report %q: want a note of the raise", b.String())
	}
	b.Reset()
	g.Restore()
	g.Report(log)
	if b.Len() != 0 {
		t.Errorf("report after restore %q: want nothing new", b.String())
	}
	if got := debug.SetMemoryLimit(-1); got != prev {
		t.Errorf("limit %d after restore, want %d", got, prev)
	}

	// Well under the limit: unchanged over several collections.
	g = start(4 * live)
	if !waitFor(g, func() bool { return g.seen >= 3 }) {
		t.Fatal("the watch saw no collections")
	}
	if got := debug.SetMemoryLimit(-1); got != 4*live {
		t.Errorf("limit %d with the live heap at a quarter of it, want %d", got, 4*live)
	}
	g.Restore()

	// A limit the program sets during the run is left alone.
	g = start(live)
	debug.SetMemoryLimit(64 * live)
	if !waitFor(g, func() bool { return g.stopped }) {
		t.Error("the watch goes on after the program set its own limit")
	}
	if got := debug.SetMemoryLimit(-1); got != 64*live {
		t.Errorf("limit %d, want the program's %d", got, 64*live)
	}
	g.Restore()
	runtime.KeepAlive(hold)
}

// TestLimitGC: a training run gets a limit and gives it back after; a
// limit the user set, by GOMEMLIMIT or in the program, is left alone, and
// small runs get none.
func TestLimitGC(t *testing.T) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		t.Skip("GOMEMLIMIT is set for the test process")
	}
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Skip("the test process has a memory limit")
	}
	plan := Plan{Peak: 3 * gib, Items: []Item{{Name: "weights (bf16)", Bytes: gib}}}
	w := LimitGC(slog.New(slog.DiscardHandler), plan, 20*gib)
	if got := debug.SetMemoryLimit(-1); got < 3*gib || got > 4*gib {
		t.Errorf("memory limit %d during the run, want about 3 GiB", got)
	}
	if w == nil || w.ceiling != 19*gib {
		t.Errorf("watch %+v: want a ceiling of 95%% of the 20 GiB available", w)
	}
	w.Restore()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit %d after the run, want none", got)
	}
	if w := LimitGC(slog.New(slog.DiscardHandler), Plan{Peak: gib / 4}, 20*gib); w != nil {
		t.Errorf("a small run got a watch")
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("a small run set memory limit %d", got)
	}
	t.Setenv("GOMEMLIMIT", "off")
	LimitGC(slog.New(slog.DiscardHandler), plan, 20*gib).Restore()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: memory limit %d", got)
	}
	os.Unsetenv("GOMEMLIMIT")
	prev := debug.SetMemoryLimit(5 * gib)
	defer debug.SetMemoryLimit(prev)
	LimitGC(slog.New(slog.DiscardHandler), plan, 20*gib).Restore()
	if got := debug.SetMemoryLimit(-1); got != 5*gib {
		t.Errorf("memory limit %d, want the program's 5 GiB", got)
	}
}

// TestPlanResident: the plan's resident part is found by the item names
// Estimate gives (a renamed item fails here, not silently).
func TestPlanResident(t *testing.T) {
	c, err := model.ReadConfig("../model/testdata/configs/Qwen2.5-0.5B-Instruct.json")
	if err != nil {
		t.Fatal(err)
	}
	// grpo.DefaultConfig's sizes.
	cfg := Training{NumGenerations: 8, BatchSize: 8, GradientAccumulationSteps: 1, GenerationBatchSize: 8, MaxPromptLength: 512, MaxCompletionLength: 512}
	plan, err := Estimate(Request{Model: c, Train: cfg, LoRARank: 8, Storage: model.StorageAsStored})
	if err != nil {
		t.Fatal(err)
	}
	// Under the limit it sets, the plan counts no collector's headroom; a
	// run too small for a limit (a 2-layer model of width 64, LoRA, 2
	// short rows) does.
	if s := plan.gcSlack(); s != 0 {
		t.Errorf("GC headroom %d of a %d peak: want none under the Go memory limit", s, plan.Peak)
	}
	tiny := Training{BatchSize: 2, MaxCompletionLength: 8}
	sp, err := Estimate(Request{Model: planModel(1000, 64, 128, 2, 4, 2, 16), Train: tiny, LoRARank: 8, Storage: model.StorageAsStored, PromptTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	if s := sp.gcSlack(); s <= 0 || s >= sp.Peak/2 || sp.Peak-s >= minLimitedPeak {
		t.Errorf("small run: GC headroom %d of a %d peak: want the plan's \"Go runtime and GC\" item beyond the runtime", s, sp.Peak)
	}
	held := c.HeldBytes(model.StorageAsStored, "BF16", false)
	if r := plan.resident(); r < held+runtimeBase || r > held+runtimeBase+held/10 {
		t.Errorf("resident %d, want the bf16 weights %d + LoRA masters + runtime %d", r, held, runtimeBase)
	}
}
