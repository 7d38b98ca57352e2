package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/grpokit/grpokit/dataset"
)

// generateCmd is "grpokit generate": complete one prompt.
func generateCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	var s sampling
	s.register(fs)
	prompt := fs.String("prompt", "", "the prompt")
	n := fs.Int("n", 1, "completions to sample")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *prompt == "" {
		return usageError{errors.New("grpokit generate: -prompt is required")}
	}
	if *n < 1 {
		return usageError{fmt.Errorf("grpokit generate: -n %d: want ≥ 1", *n)}
	}
	l, err := s.load()
	if err != nil {
		return err
	}
	p, err := l.policy(true)
	if err != nil {
		return err
	}
	ex, opts := s.example(l, nil, *prompt), s.options()
	if err := fitContext(p, l, ex, &opts, logOut); err != nil {
		return err
	}
	comps, err := p.Generate(ctx, []dataset.Example{ex}, *n, opts)
	if err != nil {
		return err
	}
	for i, c := range comps {
		if len(comps) > 1 {
			fmt.Fprintf(out, "--- %d\n", i+1)
		}
		fmt.Fprintln(out, c.Text)
	}
	return nil
}
