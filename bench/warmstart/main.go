// Command warmstart draws the sampled-reward curves of the warm-start
// comparison (internal/trlref/warmstart.py): for each learning rate, the
// reward of grpokit's and TRL's runs, each the mean over its seeds.
//
//	go run ./bench/warmstart -dir /tmp/warmstart -out docs/results/warmstart-collapse.png
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/grpokit/grpokit/plot"
)

func main() {
	dir := flag.String("dir", "", "folder of the {grpokit,trl}-LR-SEED.jsonl files")
	out := flag.String("out", "warmstart-collapse.png", "the PNG written")
	window := flag.Int("window", 5, "moving-average window in steps")
	flag.Parse()
	if err := run(*dir, *out, *window); err != nil {
		fmt.Fprintln(os.Stderr, "warmstart:", err)
		os.Exit(1)
	}
}

// rewards reads the per-step "reward" of one run.
func rewards(path string) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ys []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r, ok := m["reward"].(float64)
		if !ok {
			return nil, fmt.Errorf("%s: a line without reward", path)
		}
		ys = append(ys, r)
	}
	return ys, sc.Err()
}

func run(dir, out string, window int) error {
	files, err := filepath.Glob(filepath.Join(dir, "*-*-*.jsonl"))
	if err != nil {
		return err
	}
	sums := map[string][]float64{}
	counts := map[string]int{}
	lrs := map[string]float64{}
	for _, path := range files {
		parts := strings.Split(strings.TrimSuffix(filepath.Base(path), ".jsonl"), "-")
		side, lr := parts[0], strings.Join(parts[1:len(parts)-1], "-")
		if side != "grpokit" && side != "trl" {
			continue
		}
		v, err := strconv.ParseFloat(lr, 64)
		if err != nil {
			return fmt.Errorf("%s: learning rate %q: %w", path, lr, err)
		}
		ys, err := rewards(path)
		if err != nil {
			return err
		}
		key := side + " lr " + lr
		lrs[key] = v
		if sums[key] == nil {
			sums[key] = make([]float64, len(ys))
		}
		for i := range min(len(ys), len(sums[key])) {
			sums[key][i] += ys[i]
		}
		counts[key]++
	}
	if len(sums) == 0 {
		return fmt.Errorf("no runs in %s", dir)
	}
	keys := make([]string, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if lrs[keys[i]] != lrs[keys[j]] {
			return lrs[keys[i]] > lrs[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var lines []plot.Line
	for _, k := range keys {
		ys := sums[k]
		x := make([]float64, len(ys))
		for i := range ys {
			ys[i] /= float64(counts[k])
			x[i] = float64(i + 1)
		}
		lines = append(lines, plot.Line{Name: fmt.Sprintf("%s (%d seeds)", k, counts[k]), X: x, Y: plot.MovingAverage(ys, window)})
	}
	title := fmt.Sprintf("sampled reward after the warm start (mean over seeds, moving average of %d steps)", window)
	return plot.Lines(out, title, "step", "reward", lines...)
}
