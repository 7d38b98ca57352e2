package clilog_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/internal/clilog"
)

func TestHandler(t *testing.T) {
	var b strings.Builder
	log := clilog.New(&b, "grpokit", nil)
	log.Warn("no learning signal", "steps", 10, "hint", "raise num_generations")
	log.Info("memory limit set", slog.Group("limit", "bytes", int64(5)), "err", errors.New("x y"))
	log.Debug("dropped")
	log.With("run", "a").WithGroup("g").Error("failed", "k", "")
	clilog.New(&b, "", slog.LevelWarn).Info("dropped too")
	want := `grpokit: warning: no learning signal steps=10 hint="raise num_generations"
grpokit: memory limit set limit.bytes=5 err="x y"
grpokit: error: failed run=a g.k=""
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
