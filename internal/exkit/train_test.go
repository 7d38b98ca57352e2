package exkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTrain(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name      string
		steps     int
		limit     time.Duration
		cancel    bool // the caller's context is cancelled (Ctrl-C)
		train     func(ctx context.Context) error
		wantStop  bool
		wantErr   error
		wantOut   string
		wantPlots int
	}{
		{name: "no steps: nothing runs", steps: 0, train: func(context.Context) error { panic("trained") }},
		{name: "finished", steps: 3, train: func(context.Context) error { return nil }, wantPlots: 1},
		{name: "time limit: saved, then evaluated", steps: 3, limit: 10 * time.Millisecond,
			train:   func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			wantOut: "demo: time limit 10ms reached after 2 steps; checkpoint saved", wantPlots: 1},
		{name: "interrupted: stop, no error", steps: 3, cancel: true,
			train:    func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			wantStop: true, wantOut: "demo: interrupted after 2 steps", wantPlots: 1},
		{name: "training error", steps: 3, train: func(context.Context) error { return boom }, wantErr: boom, wantPlots: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			var out bytes.Buffer
			plots := 0
			c := &Config{Steps: tt.steps, TimeLimit: Duration(tt.limit), Out: "/tmp/demo"}
			_, stop, err := Train(ctx, "demo", c, &out, func() int { return 2 }, tt.train,
				func() error { plots++; return errors.New("no metrics") })
			if stop != tt.wantStop || !errors.Is(err, tt.wantErr) {
				t.Errorf("stop %v, err %v; want %v, %v", stop, err, tt.wantStop, tt.wantErr)
			}
			if plots != tt.wantPlots {
				t.Errorf("plot called %d times, want %d", plots, tt.wantPlots)
			}
			if tt.wantPlots > 0 && !strings.Contains(out.String(), "demo: plot: no metrics") {
				t.Errorf("plot error not reported:\n%s", out.String())
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("output lacks %q:\n%s", tt.wantOut, out.String())
			}
		})
	}
}

func TestDuration(t *testing.T) {
	var d Duration
	if err := d.Set("soon"); err == nil || !strings.Contains(err.Error(), `"soon" is not a duration`) {
		t.Errorf("Set(soon) = %v", err)
	}
	if err := json.Unmarshal([]byte(`"1m30s"`), &d); err != nil || time.Duration(d) != 90*time.Second {
		t.Errorf("unmarshal: %v, %v", d.String(), err)
	}
	if err := json.Unmarshal([]byte(`90`), &d); err == nil {
		t.Error("a number: want an error")
	}
	b, err := json.Marshal(d)
	if err != nil || string(b) != `"1m30s"` {
		t.Errorf("marshal = %s, %v", b, err)
	}
}
