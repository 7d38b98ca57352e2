package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TR-DPO's keys from a config file: full fine-tuning syncs the reference
// (its checkpoints hold reference.gob, its memory plan says so); with a
// LoRA adapter the run is refused, as TRL refuses a PEFT model.
func TestSyncRefModel(t *testing.T) {
	dir := t.TempDir()
	cfg := toyRun(t, dir, false, 2)
	rewriteConfig(t, cfg, func(body string) string {
		return "beta: 0.04\nsync_ref_model: true\nref_model_sync_steps: 1\nref_model_mixup_alpha: 0.5\n" + body
	})
	var out bytes.Buffer
	if err := run(context.Background(), []string{"train", "-config", cfg}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if want := "mixed with the policy every 1 steps"; !strings.Contains(out.String(), want) {
		t.Errorf("train output lacks %q:\n%s", want, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "run", "checkpoint-2", "reference.gob")); err != nil {
		t.Errorf("the checkpoint lacks the reference weights: %v", err)
	}

	lora := toyRun(t, t.TempDir(), true, 1)
	rewriteConfig(t, lora, func(body string) string { return "beta: 0.04\nsync_ref_model: true\n" + body })
	err := run(context.Background(), []string{"train", "-config", lora}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "sync_ref_model with a LoRA adapter") {
		t.Errorf("LoRA with sync_ref_model: %v", err)
	}
}
