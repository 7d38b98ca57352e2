package exkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/grpokit/grpokit/internal/clilog"
	"github.com/grpokit/grpokit/internal/interrupt"
)

// Main is the whole main function of an example: it parses the command
// line into cfg (exit status 2 on a bad flag, 0 after -help), then runs
// the example under a context that SIGINT (Ctrl-C) and SIGTERM cancel, so
// that training stops after saving its last completed step (exit status 1
// on error; 130 after SIGINT and 143 after SIGTERM, as shells report a
// process such a signal ended).
func Main[C any](cfg C, parse func(*C, []string) error, run func(context.Context, C) error) {
	if err := parse(&cfg, os.Args[1:]); err != nil {
		if errors.Is(err, ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// The trainer's warnings and notes (its Logger is left nil) and the
	// other libraries' go to slog.Default(): one readable line each on
	// stderr, "gsm8k: warning: ...".
	slog.SetDefault(clilog.New(os.Stderr, filepath.Base(os.Args[0]), slog.LevelInfo))
	ctx, stop := interrupt.Context(context.Background())
	defer stop()
	stopProfile, err := startProfile(any(&cfg))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = run(ctx, cfg)
	stopProfile()
	sig, caught := interrupt.Caught(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	switch {
	case caught:
		os.Exit(sig.ExitCode())
	case err != nil:
		os.Exit(1)
	}
}

// startProfile starts the CPU profile that cfg's -cpuprofile asks for, if
// cfg embeds Config and names a file; the returned function stops it.
func startProfile(cfg any) (func(), error) {
	shared, ok := cfg.(interface{ Shared() *Config })
	if !ok || shared.Shared().CPUProfile == "" {
		return func() {}, nil
	}
	f, err := os.Create(shared.Shared().CPUProfile)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "cpuprofile:", err)
		}
	}, nil
}
