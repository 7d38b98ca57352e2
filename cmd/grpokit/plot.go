package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/grpokit/grpokit/plot"
)

// plotCmd is "grpokit plot": the standard figures of a metrics.jsonl.
func plotCmd(_ context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	window := fs.Int("window", 10, "moving-average window in steps (≤ 1: raw values only)")
	outDir := fs.String("out", "", "folder for the PNGs, made if missing (default: beside metrics.jsonl)")
	title := fs.String("title", "", "title prefix")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{errors.New("grpokit plot: want one metrics.jsonl")}
	}
	path := fs.Arg(0)
	dir := *outDir
	if dir == "" {
		dir = filepath.Dir(path)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("grpokit plot: -out: %w", err)
	}
	files, err := plot.Metrics(path, dir, plot.Options{Window: *window, Title: *title})
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintln(out, f)
	}
	return nil
}
