package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	put := func(text string, fail error) error {
		return Write(path, func(f *os.File) error {
			if _, err := f.WriteString(text); err != nil {
				return err
			}
			return fail
		})
	}
	check := func(want string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil || string(b) != want {
			t.Fatalf("%s holds %q (%v), want %q", path, b, err, want)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Fatalf("%d files in the folder, want 1 (a temporary file left behind?)", len(entries))
		}
	}
	if err := put("one", nil); err != nil {
		t.Fatal(err)
	}
	check("one")
	boom := errors.New("boom")
	if err := put("two", boom); !errors.Is(err, boom) {
		t.Fatalf("Write returned %v, want the callback's error", err)
	}
	check("one")
	if err := put("three", nil); err != nil {
		t.Fatal(err)
	}
	check("three")
	if err := Write(filepath.Join(dir, "missing", "b"), func(*os.File) error { return nil }); err == nil {
		t.Error("Write into a missing folder gave no error")
	}
}
