package plot

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/grpokit/grpokit/grpo"
)

// Options configure Metrics. The zero value means raw values only.
type Options struct {
	// Window, when above 1, adds to each series its moving average over
	// that many steps.
	Window int
	// Title prefixes each figure's title (e.g. the run's name).
	Title string
}

// figure is one standard figure: its file, title, y label and the keys it
// draws (a key ending in "/" takes every metric "<key><name>/mean").
type figure struct {
	file, title, yLabel string
	keys                []string
}

var figures = []figure{
	{"reward.png", "mean reward per step", "reward", []string{"reward", "rewards/"}},
	{"loss.png", "loss per step", "loss", []string{"loss"}},
	{"kl.png", "KL to the reference model", "kl", []string{"kl"}},
	{"entropy.png", "mean token entropy", "nats", []string{"entropy"}},
	{"completion_length.png", "completion length", "tokens", []string{"completions/mean_length", "completions/max_length"}},
	{"frac_reward_zero_std.png", "groups whose rewards are all equal (no learning signal)", "fraction", []string{"frac_reward_zero_std"}},
}

// Metrics reads a metrics.jsonl written by grpo.Trainer and writes the
// standard figures into outDir: reward.png (the total and each named
// reward; a single reward equal to the total is not drawn twice), loss.png, kl.png, entropy.png, completion_length.png and
// frac_reward_zero_std.png, each only when the file has that metric. It
// returns the paths written.
func Metrics(metricsPath, outDir string, opts Options) ([]string, error) {
	ms, err := grpo.ReadMetrics(metricsPath)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("plot: %s has no steps", metricsPath)
	}
	var names []string // the named rewards, in file order
	for k := range ms[0] {
		if rest, ok := strings.CutPrefix(k, "rewards/"); ok {
			if name, ok := strings.CutSuffix(rest, "/mean"); ok {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	// One reward of weight 1 is the total itself: its line would lie on
	// the total's, so the figure draws the total alone.
	if len(names) == 1 && sameSeries(ms, "reward", "rewards/"+names[0]+"/mean") {
		names = nil
	}
	var written []string
	for _, f := range figures {
		var keys []string
		for _, k := range f.keys {
			if strings.HasSuffix(k, "/") {
				for _, n := range names {
					keys = append(keys, k+n+"/mean")
				}
			} else {
				keys = append(keys, k)
			}
		}
		lines := SeriesLines(ms, opts.Window, keys...)
		if len(lines) == 0 {
			continue
		}
		title := f.title
		if opts.Title != "" {
			title = opts.Title + ": " + title
		}
		path := filepath.Join(outDir, f.file)
		if err := Lines(path, title, "step", f.yLabel, lines...); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	return written, nil
}

// sameSeries reports whether metrics a and b have the same (finite) steps
// and, at each, values equal to a relative 1e-9.
func sameSeries(ms []grpo.Metrics, a, b string) bool {
	xa, ya := grpo.Series(ms, a)
	xb, yb := grpo.Series(ms, b)
	if len(xa) == 0 || !slices.Equal(xa, xb) {
		return false
	}
	for i, u := range ya {
		if math.Abs(u-yb[i]) > 1e-9*math.Max(1, math.Abs(u)) {
			return false
		}
	}
	return true
}

// SeriesLines returns one Line per key present in ms (its value per step)
// and, when window > 1, its moving average over window steps.
func SeriesLines(ms []grpo.Metrics, window int, keys ...string) []Line {
	var out []Line
	for _, k := range keys {
		x, y := grpo.Series(ms, k)
		if len(x) == 0 {
			continue
		}
		out = append(out, Line{Name: k, X: x, Y: y})
		if window > 1 && len(y) > window {
			out = append(out, Line{Name: fmt.Sprintf("%s (mean of %d)", k, window), X: x, Y: MovingAverage(y, window)})
		}
	}
	return out
}

// MetricLines reads metrics.jsonl and returns SeriesLines of keys.
func MetricLines(path string, window int, keys ...string) ([]Line, error) {
	ms, err := grpo.ReadMetrics(path)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	return SeriesLines(ms, window, keys...), nil
}
