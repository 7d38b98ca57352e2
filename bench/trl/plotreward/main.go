// Command plotreward draws the mean reward per GRPO step of runs of an
// example (grpokit) and of its bench/trl script (TRL) on one plot, each
// with its moving average. Each argument is NAME=metrics.jsonl.
//
//	go run ./bench/trl/plotreward -out docs/results/poker-real.png \
//	    "grpokit seed 1=runs/real-s1/metrics.jsonl" "TRL seed 1=runs/trl-s1/metrics.jsonl"
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/grpokit/grpokit/plot"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("plotreward", flag.ContinueOnError)
	out := fs.String("out", "poker-real.png", "the PNG to write")
	window := fs.Int("window", 10, "moving-average window in steps")
	title := fs.String("title", "poker, SmolLM2-135M-Instruct: mean reward per GRPO step (class-weighted)", "the plot's title")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("plotreward: want NAME=metrics.jsonl arguments, one per run")
	}
	var lines []plot.Line
	for _, arg := range fs.Args() {
		name, path, ok := strings.Cut(arg, "=")
		if !ok {
			return fmt.Errorf("plotreward: %q: want NAME=metrics.jsonl", arg)
		}
		ls, err := plot.MetricLines(path, *window, "reward")
		if err != nil {
			return fmt.Errorf("plotreward: %w", err)
		}
		for _, l := range ls {
			l.Name = name + ": " + l.Name
			lines = append(lines, l)
		}
	}
	if err := plot.Lines(*out, *title, "step", "reward", lines...); err != nil {
		return fmt.Errorf("plotreward: %w", err)
	}
	return nil
}
