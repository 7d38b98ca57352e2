package exkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
)

// Main is the whole main function of an example: it parses the command
// line into cfg (exit status 2 on a bad flag, 0 after -help), then runs
// the example under a context that Ctrl-C cancels, so that training stops
// after saving a checkpoint (exit status 1 on error).
func Main[C any](cfg C, parse func(*C, []string) error, run func(context.Context, C) error) {
	if err := parse(&cfg, os.Args[1:]); err != nil {
		if errors.Is(err, ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
