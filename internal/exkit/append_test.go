package exkit

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestAppendJSONLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "eval.jsonl")
	for _, v := range []any{map[string]int{"step": 1}, map[string]int{"step": 2}} {
		if err := AppendJSONLine(path, v); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "{\"step\":1}\n{\"step\":2}\n"; got != want {
		t.Errorf("file holds %q, want %q", got, want)
	}
	if err := AppendJSONLine(path, math.NaN()); err == nil {
		t.Error("NaN (not JSON) appended without an error")
	}
	if err := AppendText(filepath.Join(path, "x"), "a"); err == nil {
		t.Error("appending below a file gave no error")
	}
}
