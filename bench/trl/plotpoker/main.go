// Command plotpoker draws the mean reward per GRPO step of the poker runs
// of examples/poker (grpokit) and bench/trl/poker.py (TRL) on one plot,
// each with its moving average.
//
//	go run ./bench/trl/plotpoker -out docs/results/poker-real.png \
//	    runs/poker-smollm2/metrics.jsonl runs/poker-smollm2-trl/metrics.jsonl
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/grpokit/grpokit/plot"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("plotpoker", flag.ContinueOnError)
	out := fs.String("out", "poker-real.png", "the PNG to write")
	window := fs.Int("window", 10, "moving-average window in steps")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return errors.New("plotpoker: want two metrics.jsonl files: grpokit's, then TRL's")
	}
	var lines []plot.Line
	for i, name := range []string{"grpokit", "TRL"} {
		ls, err := plot.MetricLines(fs.Arg(i), *window, "reward")
		if err != nil {
			return fmt.Errorf("plotpoker: %w", err)
		}
		for _, l := range ls {
			l.Name = name + ": " + l.Name
			lines = append(lines, l)
		}
	}
	if err := plot.Lines(*out, "poker, SmolLM2-135M-Instruct: mean reward per GRPO step (class-weighted)", "step", "reward", lines...); err != nil {
		return fmt.Errorf("plotpoker: %w", err)
	}
	return nil
}
