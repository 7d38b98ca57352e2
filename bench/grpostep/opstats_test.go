package main

import (
	"strings"
	"testing"
	"time"

	"github.com/grpokit/grpokit/internal/backend"
)

// TestOpStats checks the idle accounting on hand-made events: two ops and
// the spans between them inside one window, one op outside it.
func TestOpStats(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	cpu := func(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }
	events := []backend.OpEvent{
		// 10 ms on both cores: no idle.
		{Op: "DotGeneral", Elems: 1 << 20, Start: at(1), End: at(11), CPUStart: cpu(0), CPUEnd: cpu(20)},
		// 5 ms on one core: 5 core-ms idle.
		{Op: "Mul", Elems: 1000, Start: at(11), End: at(16), CPUStart: cpu(20), CPUEnd: cpu(25)},
		// 4 ms outside ops (AdamW) on both cores, then 1 ms on one core.
		{Op: "Mul", Elems: 1000, Start: at(20), End: at(21), CPUStart: cpu(33), CPUEnd: cpu(34)},
		// After the window: ignored.
		{Op: "Exp", Elems: 1000, Start: at(40), End: at(41), CPUStart: cpu(50), CPUEnd: cpu(51)},
	}
	rows, total := opStats(events, []window{{at(0), at(30)}}, 2)
	want := map[string][3]time.Duration{ // wall, cpu, count
		"DotGeneral >=1M":                       {10 * time.Millisecond, 20 * time.Millisecond, 1},
		"Mul <4K":                               {6 * time.Millisecond, 6 * time.Millisecond, 2},
		"(outside ops: AdamW loops, host code)": {4 * time.Millisecond, 8 * time.Millisecond, 1},
		"(between ops: executor)":               {0, 0, 1}, // Mul right after DotGeneral
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v, want %d", rows, len(want))
	}
	for _, r := range rows {
		w, ok := want[r.name]
		if !ok || r.wall != w[0] || r.cpu != w[1] || time.Duration(r.count) != w[2] {
			t.Errorf("row %+v, want %v", r, w)
		}
	}
	if rows[0].name != "Mul <4K" { // most idle first: 12−6 = 6 core-ms
		t.Errorf("first row %q, want the most idle", rows[0].name)
	}
	if total.wall != 20*time.Millisecond || total.cpu != 34*time.Millisecond || total.overlapping {
		t.Errorf("total %+v, want 20 ms wall, 34 ms CPU, no overlap", total)
	}
	var out strings.Builder
	printOpStats(&out, events, []window{{at(0), at(30)}}, 2)
	if !strings.Contains(out.String(), "| Mul <4K") || !strings.Contains(out.String(), "training part wall: 30.0 ms") {
		t.Errorf("table:\n%s", out.String())
	}
	// Per decode step (10 of them in the window), with a 0.1 ms floor: the
	// Mul row (0.6 ms wall a step) is shown, the figures divided by 10.
	out.Reset()
	printOpStatsPer(&out, events, []window{{at(0), at(30)}}, 2, "generation", "decode step", 10, 100*time.Microsecond)
	if !strings.Contains(out.String(), "per decode step") || !strings.Contains(out.String(), "generation wall: 3.0 ms per decode step") ||
		!strings.Contains(out.String(), "| Mul <4K") {
		t.Errorf("decode table:\n%s", out.String())
	}
}
