package grpo

import (
	"testing"
	"time"
)

// TestEstimateETA: a run whose first step takes 60 s (compiling) and the
// next ones 1 s has, after step 10 of 100, 90 s left at its pace. Averaged
// over the whole run, as before, the estimate was 69 s / 10 × 90 = 621 s.
func TestEstimateETA(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := stepMark{step: 0, at: t0}
	marks := []stepMark{{step: 1, at: t0.Add(60 * time.Second)}}
	if eta, ok := estimateETA(marks, start, 100); !ok || eta != 99*60*time.Second {
		t.Errorf("after the first step: %v, %v; want 99 min (its own pace is all there is)", eta, ok)
	}
	for s := 2; s <= 10; s++ {
		marks = append(marks, stepMark{step: s, at: t0.Add(time.Duration(59+s) * time.Second)})
	}
	if eta, ok := estimateETA(marks, start, 100); !ok || eta != 90*time.Second {
		t.Errorf("after step 10: %v, %v; want 90s", eta, ok)
	}
	if _, ok := estimateETA(marks, start, 10); ok {
		t.Error("an ETA at the last step")
	}
}
