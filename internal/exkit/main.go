package exkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

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

// startProfile starts the CPU profile that cfg's -cpuprofile asks for and
// the peak heap profile of -memprofile, if cfg embeds Config and names
// files; the returned function stops them.
func startProfile(cfg any) (func(), error) {
	shared, ok := cfg.(interface{ Shared() *Config })
	if !ok {
		return func() {}, nil
	}
	stopHeap := func() {}
	if path := shared.Shared().MemProfile; path != "" {
		p := startPeakProfile(path, 100*time.Millisecond)
		stopHeap = func() {
			if err := p.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}
	}
	if shared.Shared().CPUProfile == "" {
		return stopHeap, nil
	}
	f, err := os.Create(shared.Shared().CPUProfile)
	if err != nil {
		stopHeap()
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		stopHeap()
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	return func() {
		stopHeap()
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "cpuprofile:", err)
		}
	}, nil
}
