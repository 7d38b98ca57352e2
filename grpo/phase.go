package grpo

import (
	"context"
	"runtime/pprof"
)

// phaseLabel is the pprof label key that marks a step's parts in a CPU
// profile: "generate" (rollouts: sampling, rewards, old log-probs) and
// "train" (forward, backward and optimizer passes). Goroutines started
// inside a part inherit it, so `go tool pprof -tagfocus grpokit=train`
// keeps the training part alone (the runtime's GC workers carry no label).
const phaseLabel = "grpokit"

// phase labels the calling goroutine with phaseLabel=name until the
// returned func restores ctx's labels.
func phase(ctx context.Context, name string) (restore func()) {
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels(phaseLabel, name)))
	return func() { pprof.SetGoroutineLabels(ctx) }
}
