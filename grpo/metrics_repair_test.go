package grpo

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepairJSONL: resuming from step 4 keeps the complete lines of steps
// 1-4 and moves aside the line of step 5 (a lost step, trained again) and
// the torn last line a full disk left, so that new lines are neither mixed
// with old ones nor glued to half a line. Before, the torn line stayed (the
// next line was appended to it) and later steps were deleted.
func TestRepairJSONL(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.jsonl")
	var text strings.Builder
	for s := 1; s <= 5; s++ {
		text.WriteString(`{"step":` + string(rune('0'+s)) + `,"loss":0.5}` + "\n")
	}
	text.WriteString(`{"step":6,"lo`)
	if err := os.WriteFile(path, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// Five lines of 22 bytes come before the torn one.
	if _, err := ReadMetrics(path); err == nil || !strings.Contains(err.Error(), "metrics.jsonl:6 (byte 110): torn last line, 13 bytes without their newline") {
		t.Errorf("reading the torn file: %v", err)
	}
	var msg bytes.Buffer
	log := slog.New(slog.NewTextHandler(&msg, nil))
	if err := repairJSONL(path, 4, log); err != nil {
		t.Fatal(err)
	}
	ms, err := ReadMetrics(path)
	if err != nil || len(ms) != 4 || ms[3]["step"] != 4 {
		t.Fatalf("after repair: %v, %v", ms, err)
	}
	asides, _ := filepath.Glob(path + ".*.aside")
	if len(asides) != 1 {
		t.Fatalf("aside files %v", asides)
	}
	got, _ := os.ReadFile(asides[0])
	if want := `{"step":5,"loss":0.5}` + "\n" + `{"step":6,"lo` + "\n"; string(got) != want {
		t.Errorf("aside file holds %q, want %q", got, want)
	}
	if !strings.Contains(msg.String(), "level=WARN") || !strings.Contains(msg.String(), "grpo: metrics.jsonl: moved 1 lines of steps after step 4 and a torn last line aside") ||
		!strings.Contains(msg.String(), "later_lines=1 bad_lines=0 torn_lines=1") || !strings.Contains(msg.String(), "aside="+path+".") {
		t.Errorf("message %q", msg.String())
	}
	// A file that agrees with the checkpoint is left alone.
	msg.Reset()
	if err := repairJSONL(path, 4, log); err != nil || msg.Len() > 0 {
		t.Errorf("second repair: %v, %q", err, msg.String())
	}
}
