package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("ranks all 12,972 guesses (about a second); skipped under -short")
	}
	path := filepath.Join(t.TempDir(), "start.txt")
	if err := run(path, 3); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{"soare 5.885960", "roate 5.882779", "raise 5.877910"}
	if len(lines) != 6 || strings.Join(lines[3:], "|") != strings.Join(want, "|") {
		t.Errorf("output:\n%s", b)
	}
	if err := run(filepath.Join(t.TempDir(), "no", "such", "dir.txt"), 3); err == nil || !strings.HasPrefix(err.Error(), "startwords: ") {
		t.Errorf("bad path error = %v", err)
	}
}
