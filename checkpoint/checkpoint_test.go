package checkpoint_test

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
)

// write writes a checkpoint of step holding one file with text.
func write(t *testing.T, dir string, step int, text string, stage func(string)) string {
	t.Helper()
	path, err := checkpoint.Write(dir, step, func(tmp string) error {
		return checkpoint.WriteFileSync(filepath.Join(tmp, "state.json"), []byte(text))
	}, stage)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWriteAndLatest(t *testing.T) {
	dir := t.TempDir()
	if _, err := checkpoint.Latest(dir, nil, nil); !errors.Is(err, checkpoint.ErrNoCheckpoint) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("empty folder: %v, want ErrNoCheckpoint", err)
	}
	var stages []string
	write(t, dir, 2, "two", nil)
	p4 := write(t, dir, 4, "four", func(s string) { stages = append(stages, s) })
	if got := strings.Join(stages, " "); got != "files manifest renamed" {
		t.Errorf("stages %q", got)
	}
	if got, err := checkpoint.Latest(dir, nil, nil); err != nil || got != p4 {
		t.Fatalf("Latest = %q, %v; want %s", got, err, p4)
	}
	if err := checkpoint.Verify(p4, true, "state.json"); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if err := checkpoint.Verify(p4, true, "variables.gob"); !errors.Is(err, checkpoint.ErrCorrupt) {
		t.Errorf("Verify of a missing required file: %v, want ErrCorrupt", err)
	}
	// A changed byte is found by the hash; Latest passes over it.
	if err := os.WriteFile(filepath.Join(p4, "state.json"), []byte("fout"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Verify(p4, true); !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), "state.json") {
		t.Errorf("Verify of a changed file: %v, want ErrCorrupt naming state.json", err)
	}
	var logged strings.Builder
	quiet := slog.New(slog.NewTextHandler(&logged, nil))
	if got, err := checkpoint.Latest(dir, nil, quiet); err != nil || filepath.Base(got) != "checkpoint-2" {
		t.Errorf("Latest with checkpoint-4 broken = %q, %v; want checkpoint-2", got, err)
	}
	if !strings.Contains(logged.String(), "checkpoint-4") {
		t.Errorf("the broken checkpoint was not logged: %q", logged.String())
	}
	// Re-saving a step moves the old copy aside, then deletes it.
	stages = nil
	write(t, dir, 4, "four", func(s string) { stages = append(stages, s) })
	if got := strings.Join(stages, " "); got != "files manifest aside renamed" {
		t.Errorf("re-save stages %q", got)
	}
	st, err := checkpoint.Statuses(dir, nil)
	if err != nil || len(st) != 2 || st[0].Step != 4 || st[0].Err != nil || st[1].Step != 2 {
		t.Errorf("Statuses = %+v, %v", st, err)
	}
}

// TestTidyAfterCrash: a kill after the old copy was moved aside and before
// the new one was renamed in leaves the aside copy, which Tidy puts back;
// a temporary folder is removed.
func TestTidyAfterCrash(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, 3, "three", nil)
	final := filepath.Join(dir, "checkpoint-3")
	aside := filepath.Join(dir, ".old-checkpoint-3-99")
	if err := os.Rename(final, aside); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".tmp-checkpoint-3-99")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Tidy(dir, "state.json"); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Verify(final, true); err != nil {
		t.Errorf("the aside copy was not put back: %v", err)
	}
	for _, p := range []string{aside, tmp} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left behind (%v)", p, err)
		}
	}
}

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		name      string
		step      int
		aside, ok bool
	}{
		{"checkpoint-12", 12, false, true},
		{".old-checkpoint-7-123", 7, true, true},
		{"checkpoint-012", 0, false, false},
		{"checkpoint--1", 0, false, false},
		{"checkpoint-x", 0, false, false},
		{".tmp-checkpoint-3-1", 0, false, false},
	} {
		step, aside, ok := checkpoint.ParseName(tc.name)
		if step != tc.step || aside != tc.aside || ok != tc.ok {
			t.Errorf("ParseName(%q) = %d, %v, %v", tc.name, step, aside, ok)
		}
	}
}

func TestPrune(t *testing.T) {
	dir := t.TempDir()
	for _, s := range []int{1, 2, 3, 4} {
		write(t, dir, s, "mine", nil)
	}
	write(t, dir, 5, "other", nil)
	mine := func(d string) bool {
		b, err := os.ReadFile(filepath.Join(d, "state.json"))
		return err == nil && string(b) == "mine"
	}
	if err := checkpoint.Prune(dir, 2, filepath.Join(dir, "checkpoint-1"), mine); err != nil {
		t.Fatal(err)
	}
	var left []string
	ds, _ := checkpoint.List(dir)
	for _, d := range ds {
		left = append(left, filepath.Base(d.Path))
	}
	if got := strings.Join(left, " "); got != "checkpoint-5 checkpoint-4 checkpoint-3 checkpoint-1" {
		t.Errorf("after Prune(2, keeping checkpoint-1; checkpoint-5 another run's): %s", got)
	}
}

func TestLockAndOutputDir(t *testing.T) {
	if !checkpoint.LockingSupported {
		t.Skip("no flock on this platform")
	}
	dir := filepath.Join(t.TempDir(), "out")
	l, err := checkpoint.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Lock(dir); !errors.Is(err, checkpoint.ErrLocked) {
		t.Errorf("second Lock: %v, want ErrLocked", err)
	}
	if err := checkpoint.CheckOutputDir(dir, true); !errors.Is(err, checkpoint.ErrLocked) {
		t.Errorf("CheckOutputDir while locked: %v, want ErrLocked", err)
	}
	l.Release()
	l.Release() // a second release does nothing
	if err := checkpoint.CheckOutputDir(dir, false); err != nil {
		t.Errorf("CheckOutputDir after release: %v", err)
	}
	write(t, dir, 1, "x", nil)
	var inUse *checkpoint.OutputDirInUseError
	if err := checkpoint.CheckOutputDir(dir, false); !errors.As(err, &inUse) || !errors.Is(err, checkpoint.ErrOutputDirInUse) || inUse.Found != "checkpoint-1" {
		t.Errorf("CheckOutputDir of a folder with a checkpoint: %v", err)
	}
	if err := checkpoint.Claim(dir, true, nil); err != nil {
		t.Fatal(err)
	}
	if ds, _ := checkpoint.List(dir); len(ds) != 0 {
		t.Errorf("Claim with overwrite left %v", ds)
	}
}
