package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/grpokit/grpokit/bench/internal/torchref"
)

// torchRun is one PyTorch run of the step: the JSON of
// bench/torch_grpostep.py (eager or under torch.compile).
type torchRun struct {
	label string             // "torch 2.15.0 compile"; "PyTorch" when the JSON has none
	info  string             // the build line: torch, BLAS, ISA, threads
	sec   map[string]float64 // "seconds": first, step, generate, ..., compile
	mem   map[string]float64 // "memory": peak_rss_mb
}

// loadTorchRuns reads the comma-separated JSON files of list, in order;
// an empty list gives none.
func loadTorchRuns(list string) ([]torchRun, error) {
	var runs []torchRun
	for _, path := range strings.Split(list, ",") {
		if path == "" {
			continue
		}
		f, err := torchref.Read(path)
		if err != nil {
			return nil, err
		}
		sec, err := f.Table("seconds")
		if err != nil {
			return nil, err
		}
		mem, err := f.Table("memory")
		if err != nil {
			mem = map[string]float64{}
		}
		label := f.Label
		if label == "" {
			label = "PyTorch"
		}
		runs = append(runs, torchRun{label: label, info: f.Info, sec: sec, mem: mem})
	}
	return runs, nil
}

// anchor returns the index of the run with the shortest step median, the
// one grpokit's step is measured against, or -1 when no run has one.
func anchor(runs []torchRun) int {
	best := -1
	for i, r := range runs {
		if t := r.sec["step"]; t > 0 && (best < 0 || t < runs[best].sec["step"]) {
			best = i
		}
	}
	return best
}

// cell is one PyTorch run's figure and ratio in a table row.
type cell struct{ ref, ratio string }

// table prints rows of grpokit's figure beside each run's cells.
type table struct {
	w      io.Writer
	labels []string
}

func (t table) widths() []int {
	ws := make([]int, len(t.labels))
	for i, l := range t.labels {
		ws[i] = max(10, len(l)+2)
	}
	return ws
}

func (t table) header() {
	ws := t.widths()
	fmt.Fprintf(t.w, "| %-28s | %10s |", "part", "grpokit s")
	for i, l := range t.labels {
		fmt.Fprintf(t.w, " %*s | %7s |", ws[i], l+" s", "ratio")
	}
	fmt.Fprintf(t.w, "\n|%s|%s|", dashes(30), dashes(12))
	for _, n := range ws {
		fmt.Fprintf(t.w, "%s|%s|", dashes(n+2), dashes(9))
	}
	fmt.Fprintln(t.w)
}

func (t table) row(name, ours string, cells []cell) {
	ws := t.widths()
	fmt.Fprintf(t.w, "| %-28s | %10s |", name, ours)
	for i, c := range cells {
		fmt.Fprintf(t.w, " %*s | %7s |", ws[i], c.ref, c.ratio)
	}
	fmt.Fprintln(t.w)
}

// cells returns, for each run, its figure under key printed with format
// ("-" where it has none) and ratio(its, ours) when ratio is non-nil.
func cells(runs []torchRun, key, format string, ours float64, ratio func(theirs, ours float64) string) []cell {
	cs := make([]cell, len(runs))
	for i, r := range runs {
		cs[i].ref = "-"
		if t, ok := r.sec[key]; ok && t > 0 {
			cs[i].ref = fmt.Sprintf(format, t)
		}
		if ratio != nil {
			cs[i].ratio = ratio(r.sec[key], ours)
		}
	}
	return cs
}

// printRatios prints one ratio line per PyTorch run when there are
// several, then the ratio against the anchor (the last line, which
// bench/run.sh collects).
func printRatios(w io.Writer, label string, runs []torchRun, steady float64) {
	best := anchor(runs)
	if best < 0 {
		fmt.Fprintf(w, "%s: - (no PyTorch figures; run bench/run.sh grpostep)\n", label)
		return
	}
	if len(runs) > 1 {
		for _, r := range runs {
			if t := r.sec["step"]; t > 0 {
				fmt.Fprintf(w, "%s vs %s: %.2f×\n", label, r.label, t/steady)
			}
		}
	}
	which := ""
	if len(runs) > 1 {
		which = fmt.Sprintf(" (the fastest of %d PyTorch runs)", len(runs))
	}
	fmt.Fprintf(w, "%s: %.2f× vs %s%s\n", label, runs[best].sec["step"]/steady, runs[best].label, which)
}
