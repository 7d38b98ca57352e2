package main

// -opstats: where the cores idle in the training part. With the backend's
// op trace on (backend.EnableOpTrace), every op of the timed steps is
// recorded with its wall time and the process CPU time that passed while
// it ran; an op on P cores whose CPU time is below P times its wall time
// left cores idle for the difference. The spans between ops are the
// executor's bookkeeping (short ones) or work outside the graphs (long
// ones: the AdamW loops, host code).

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/grpokit/grpokit/internal/backend"
)

// window is one training part: [start, end).
type window struct{ start, end time.Time }

// opRow is one line of the table: per step.
type opRow struct {
	name        string
	count       int
	wall, cpu   time.Duration
	elems       int64
	overlapping bool
}

// gapSplit is the longest span between two ops counted as executor
// bookkeeping; longer spans are work outside the graphs.
const gapSplit = 200 * time.Microsecond

// sizeClass names an op's output size class: parallelFor splits ops over
// the cores only from parallelMinWork (64K) elements on.
func sizeClass(elems int) string {
	switch {
	case elems < 4096:
		return "<4K"
	case elems < 1<<16:
		return "4K-64K"
	case elems < 1<<20:
		return "64K-1M"
	}
	return ">=1M"
}

// opStats sums the events inside the windows by op and size class, plus
// the spans between them, and returns the rows sorted by idle core time
// (procs·wall − CPU), most first, and the totals.
func opStats(events []backend.OpEvent, windows []window, procs int) (rows []opRow, total opRow) {
	by := map[string]*opRow{}
	add := func(name string, wall, cpu time.Duration, elems int) {
		r := by[name]
		if r == nil {
			r = &opRow{name: name}
			by[name] = r
		}
		r.count++
		r.wall += wall
		r.cpu += cpu
		r.elems += int64(elems)
	}
	slices.SortFunc(events, func(a, b backend.OpEvent) int { return a.Start.Compare(b.Start) })
	for _, w := range windows {
		var prev, first *backend.OpEvent
		var cpuEnd time.Duration
		for i := range events {
			e := &events[i]
			if e.Start.Before(w.start) || !e.End.Before(w.end) {
				continue
			}
			if prev != nil {
				if e.Start.Before(prev.End) {
					// Ops ran side by side: the per-op split below
					// double-counts CPU; only the totals hold.
					total.overlapping = true
				} else {
					gap, cpu := e.Start.Sub(prev.End), e.CPUStart-prev.CPUEnd
					name := "(between ops: executor)"
					if gap > gapSplit {
						name = "(outside ops: AdamW loops, host code)"
					}
					add(name, gap, cpu, 0)
				}
			}
			add(e.Op+" "+sizeClass(e.Elems), e.End.Sub(e.Start), e.CPUEnd-e.CPUStart, e.Elems)
			if prev == nil || e.End.After(prev.End) {
				prev = e
			}
			if first == nil {
				first = e
			}
			cpuEnd = max(cpuEnd, e.CPUEnd)
		}
		// The total is the span from the first op's start to the last
		// op's end, exact also when ops overlapped.
		if first != nil {
			total.count++
			total.wall += prev.End.Sub(first.Start)
			total.cpu += cpuEnd - first.CPUStart
		}
	}
	for _, r := range by {
		rows = append(rows, *r)
	}
	idle := func(r opRow) time.Duration { return time.Duration(procs)*r.wall - r.cpu }
	slices.SortFunc(rows, func(a, b opRow) int { return cmp.Or(cmp.Compare(idle(b), idle(a)), cmp.Compare(a.name, b.name)) })
	return rows, total
}

// printOpStats writes the table, per step (n windows), rows with at least
// 1 ms of idle core time or wall time per step.
func printOpStats(w io.Writer, events []backend.OpEvent, windows []window, procs int) {
	printOpStatsPer(w, events, windows, procs, "training part", "step", len(windows), time.Millisecond)
}

// printOpStatsPer prints the op table of the windows (what they are),
// every figure divided by per units of unit; ops whose wall or idle time a
// unit is below least are left out of the table (not the total).
func printOpStatsPer(w io.Writer, events []backend.OpEvent, windows []window, procs int, what, unit string, per int, least time.Duration) {
	rows, total := opStats(events, windows, procs)
	n := time.Duration(max(per, 1))
	ms := func(d time.Duration) float64 { return float64(d/n) / 1e6 }
	fmt.Fprintf(w, "\nop trace of the %s (%d %ss, per %s; idle = %d·wall − CPU, core-ms):\n\n", what, per, unit, unit, procs)
	fmt.Fprintf(w, "| %-48s | %7s | %9s | %9s | %9s | %6s | %10s |\n", "op (output elements)", "ops", "wall ms", "CPU ms", "idle ms", "busy", "mean elems")
	fmt.Fprintf(w, "|%s|%s|%s|%s|%s|%s|%s|\n", dashes(50), dashes(9), dashes(11), dashes(11), dashes(11), dashes(8), dashes(12))
	line := func(r opRow) {
		busy, mean := 0.0, int64(0)
		if r.wall > 0 {
			busy = float64(r.cpu) / float64(time.Duration(procs)*r.wall)
		}
		if r.count > 0 {
			mean = r.elems / int64(r.count)
		}
		fmt.Fprintf(w, "| %-48s | %7d | %9.1f | %9.1f | %9.1f | %5.0f%% | %10d |\n", r.name, r.count/int(n),
			ms(r.wall), ms(r.cpu), ms(time.Duration(procs)*r.wall-r.cpu), 100*busy, mean)
	}
	for _, r := range rows {
		if idle := time.Duration(procs)*r.wall - r.cpu; idle/n >= least || r.wall/n >= least {
			line(r)
		}
	}
	total.name = "total (first op to last op)"
	total.count = 0
	for _, r := range rows {
		if r.name[0] != '(' {
			total.count += r.count
		}
	}
	line(total)
	var trainWall time.Duration
	for _, w := range windows {
		trainWall += w.end.Sub(w.start)
	}
	fmt.Fprintf(w, "%s wall: %.1f ms per %s\n", what, ms(trainWall), unit)
	if total.overlapping {
		fmt.Fprintf(w, "ops overlapped (parallel execution): per-op CPU is shared between the ops running together; only the total is exact\n")
	}
}
