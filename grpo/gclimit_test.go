package grpo

import (
	"io"
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/grpokit/grpokit/model"
)

const gib = 1 << 30

// TestGCLimit: the plan's peak, raised by what the process holds beyond the
// plan's resident part, capped by the memory available.
func TestGCLimit(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		peak, resident, inUse, avail int64
		want                         int64
	}{
		{"the plan's peak", 3 * gib, gib, gib, 20 * gib, 3 * gib},
		{"more held than planned", 3 * gib, gib, 2 * gib, 20 * gib, 4 * gib},
		{"capped by the memory available", 30 * gib, gib, gib, 20 * gib, 20 * gib},
		{"no available figure", 3 * gib, gib, gib, 0, 3 * gib},
	} {
		if got := gcLimit(tc.peak, tc.resident, tc.inUse, tc.avail); got != tc.want {
			t.Errorf("%s: gcLimit = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestLimitGC: a training run gets a limit and gives it back after; a
// limit the user set, by GOMEMLIMIT or in the program, is left alone, and
// small runs get none.
func TestLimitGC(t *testing.T) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		t.Skip("GOMEMLIMIT is set for the test process")
	}
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Skip("the test process has a memory limit")
	}
	plan := MemoryPlan{Peak: 3 * gib, Items: []MemoryItem{{Name: "weights (bf16)", Bytes: gib}}}
	restore := limitGC(io.Discard, plan, 20*gib)
	if got := debug.SetMemoryLimit(-1); got < 3*gib || got > 4*gib {
		t.Errorf("memory limit %d during the run, want about 3 GiB", got)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit %d after the run, want none", got)
	}
	limitGC(io.Discard, MemoryPlan{Peak: gib / 2}, 20*gib)()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("a small run set memory limit %d", got)
	}
	t.Setenv("GOMEMLIMIT", "off")
	limitGC(io.Discard, plan, 20*gib)()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: memory limit %d", got)
	}
	os.Unsetenv("GOMEMLIMIT")
	prev := debug.SetMemoryLimit(5 * gib)
	defer debug.SetMemoryLimit(prev)
	limitGC(io.Discard, plan, 20*gib)()
	if got := debug.SetMemoryLimit(-1); got != 5*gib {
		t.Errorf("memory limit %d, want the program's 5 GiB", got)
	}
}

// TestPlanResident: the plan's resident part is found by the item names
// PlanMemory gives (a renamed item fails here, not silently).
func TestPlanResident(t *testing.T) {
	c, err := model.ReadConfig("../model/testdata/configs/Qwen2.5-0.5B-Instruct.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	plan, err := PlanMemory(MemoryRequest{Model: c, Train: cfg, LoRARank: 8, Storage: model.StorageAsStored})
	if err != nil {
		t.Fatal(err)
	}
	// Under the limit it sets, the plan counts no collector's headroom; a
	// run too small for a limit (SmolLM2-135M, LoRA, 2 short rows) does.
	if s := plan.gcSlack(); s != 0 {
		t.Errorf("GC headroom %d of a %d peak: want none under the Go memory limit", s, plan.Peak)
	}
	small, err := model.ReadConfig("../model/testdata/configs/SmolLM2-135M.json")
	if err != nil {
		t.Fatal(err)
	}
	tiny := Config{BatchSize: 2, MaxCompletionLength: 8}
	sp, err := PlanMemory(MemoryRequest{Model: small, Train: tiny, LoRARank: 8, Storage: model.StorageAsStored, PromptTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	if s := sp.gcSlack(); s <= 0 || s >= sp.Peak/2 || sp.Peak-s >= minLimitedPeak {
		t.Errorf("small run: GC headroom %d of a %d peak: want the plan's \"Go runtime and GC\" item beyond the runtime", s, sp.Peak)
	}
	held := c.HeldBytes(model.StorageAsStored, "BF16", false)
	if r := plan.resident(); r < held+runtimeBase || r > held+runtimeBase+held/10 {
		t.Errorf("resident %d, want the bf16 weights %d + LoRA masters + runtime %d", r, held, runtimeBase)
	}
}
