// Package plot draws training curves as PNG files: Lines for any series,
// and Metrics for the standard figures of a GRPO run's metrics.jsonl
// (reward and each named reward, loss, KL, entropy, completion length,
// the fraction of groups with zero reward spread).
//
// Usage:
//
//	files, err := plot.Metrics("runs/x/metrics.jsonl", "runs/x", plot.Options{Window: 10})
//	// runs/x/reward.png, runs/x/loss.png, …
//
// The legend sits in a strip right of the axes, never over the data. It
// uses gonum.org/v1/plot; functions return errors and are safe for
// concurrent use.
package plot
