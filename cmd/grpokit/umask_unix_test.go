// The umask is Unix's.

//go:build unix

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The files train writes (the tokenizer, configs, plots) take the umask
// like the weights, 0644 under umask 022 (they were 0600).
func TestWrittenFilesHonourUmask(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	cfg := toyRun(t, dir, false, 1)
	if err := run(context.Background(), []string{"train", "-quiet", "-config", cfg}, io.Discard); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.Walk(filepath.Join(dir, "run"), func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || strings.HasPrefix(info.Name(), ".") {
			return err
		}
		n++
		if m := info.Mode().Perm(); m != 0o644 {
			t.Errorf("%s: mode %o, want 644", path, m)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("walked %d files: %v", n, err)
	}
}
