package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLoadFilesMatchesLoadDir: the same files from memory give the same
// tokenizer (ids, special tokens, template) as from a folder, and write
// back the same files.
func TestLoadFilesMatchesLoadDir(t *testing.T) {
	dir := t.TempDir()
	if err := WriteTinyDir(dir, []string{"hello", "world"}); err != nil {
		t.Fatal(err)
	}
	want, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := readSources(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadFiles("mem", files)
	if err != nil {
		t.Fatal(err)
	}
	text := "hello world<|im_end|>"
	if a, b := got.Tokenizer.Encode(text, true), want.Tokenizer.Encode(text, true); !slices.Equal(a, b) {
		t.Errorf("ids %v, LoadDir's %v", a, b)
	}
	if got.BOS != want.BOS || !slices.Equal(got.EOS, want.EOS) || got.PAD != want.PAD || len(got.Templates) != len(want.Templates) {
		t.Errorf("specials/templates differ: %+v vs %+v", got, want)
	}
	out := t.TempDir()
	if err := got.WriteFiles(out); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || string(b) != string(data) {
			t.Errorf("%s not written back unchanged (%v)", name, err)
		}
	}
	if _, err := LoadFiles("mem", map[string][]byte{}); err == nil {
		t.Error("no tokenizer.json: want an error")
	}
}
