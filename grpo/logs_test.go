package grpo_test

import (
	"context"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/reward"
)

// textLogger returns a logger that writes slog's text lines, without the
// time, to w.
func textLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

// recorder is a slog.Handler that keeps every record.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// find returns the first record whose message contains msg, and its
// attributes.
func (r *recorder) find(msg string) (slog.Record, map[string]slog.Value, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.records {
		if strings.Contains(rec.Message, msg) {
			attrs := map[string]slog.Value{}
			rec.Attrs(func(a slog.Attr) bool {
				attrs[a.Key] = a.Value
				return true
			})
			return rec, attrs, true
		}
	}
	return slog.Record{}, nil, false
}

// TestLoggerTakesEveryWarning: with Trainer.Logger set, the trainer's
// warnings (a step without learning signal, a non-finite step not applied,
// an earlier run's logs moved aside, a broken checkpoint passed over, a
// torn metrics line moved aside, rows no reward applied to) all go to the
// Logger, at level Warn with their values as attributes, and none to
// Progress, which keeps the progress lines.
func TestLoggerTakesEveryWarning(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.SaveSteps, cfg.LoggingSteps = 4, 1, 1
	stale := `{"step":1,"loss":0.5}` + "\n"
	if err := os.WriteFile(filepath.Join(cfg.OutputDir, checkpoint.MetricsFile), []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	applies := true
	r := reward.Named{Name: "r", Weight: 1, Scorer: reward.Func(func(_, _, _ string) float64 {
		if !applies {
			return reward.NotApplicable()
		}
		return 1 // every group ties: no learning signal
	})}
	p := newPoisonPolicy(t)
	tr, err := grpo.NewTrainer(p, cfg, r)
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	var rec recorder
	tr.Progress, tr.Logger, tr.ZeroStdWarnSteps = &progress, slog.New(&rec), 2
	tr.OnStep = func(m grpo.Metrics) {
		switch int(m["step"]) {
		case 2:
			p.set(t, float32(math.NaN())) // step 3: NaN logits, NaN loss
		case 3:
			p.set(t, 0)
		}
	}
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}

	// A newer broken checkpoint and a torn last metrics line, then resume.
	broken := filepath.Join(cfg.OutputDir, "checkpoint-9")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "trainer_state.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(cfg.OutputDir, checkpoint.MetricsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"step": 5, "lo`)
	f.Close()
	applies = false
	cfg.MaxSteps = 5
	tr2, err := grpo.NewTrainer(newPolicy(t), cfg, r)
	if err != nil {
		t.Fatal(err)
	}
	tr2.Progress, tr2.Logger = &progress, slog.New(&rec)
	path, err := tr2.LatestCheckpoint()
	if err != nil || filepath.Base(path) != "checkpoint-4" {
		t.Fatalf("LatestCheckpoint = %q, %v", path, err)
	}
	if err := tr2.Resume(path); err != nil {
		t.Fatal(err)
	}
	if err := tr2.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		msg   string
		attrs map[string]string
	}{
		{"no learning signal", map[string]string{"step": "2", "steps_in_a_row": "2"}},
		{"step not applied", map[string]string{"step": "3", "in_a_row": "1"}},
		{"no checkpoint to resume", map[string]string{"file": checkpoint.MetricsFile}},
		{"skipping a broken checkpoint", map[string]string{"path": broken}},
		{"moved a torn last line aside", map[string]string{"torn_lines": "1"}},
		{"no reward applied", map[string]string{"step": "5", "rows": "8", "of": "8"}},
	} {
		r, attrs, ok := rec.find(c.msg)
		if !ok {
			t.Errorf("no record %q", c.msg)
			continue
		}
		if r.Level != slog.LevelWarn {
			t.Errorf("%q at level %v, want WARN", c.msg, r.Level)
		}
		for k, want := range c.attrs {
			if got, ok := attrs[k]; !ok || got.String() != want {
				t.Errorf("%q: %s = %v, want %s", c.msg, k, got, want)
			}
		}
		if strings.Contains(progress.String(), c.msg) {
			t.Errorf("progress holds %q:\n%s", c.msg, progress.String())
		}
	}
	if _, attrs, ok := rec.find("no reward applied"); ok && !strings.HasPrefix(attrs["prompt"].String(), "say ") {
		t.Errorf("no example prompt: %v", attrs)
	}
	if strings.Contains(strings.ToLower(progress.String()), "warn") || strings.Count(progress.String(), "step ") < 5 {
		t.Errorf("progress:\n%s", progress.String())
	}
}
