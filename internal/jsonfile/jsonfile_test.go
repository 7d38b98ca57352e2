package jsonfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadOptional(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	type doc struct {
		A int `json:"a"`
	}
	for _, c := range []struct {
		name, path string
		found      bool
		want       int
		err        string // a part of the error, "" for none
	}{
		{"present", write("ok.json", `{"a": 3}`), true, 3, ""},
		{"missing", filepath.Join(dir, "none.json"), false, 7, ""},
		{"bad json", write("bad.json", `{"a": `), false, 7, "bad.json: unexpected end of JSON input"},
		{"a folder", dir, false, 7, "not a regular file (a folder)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := doc{A: 7}
			found, err := ReadOptional(c.path, &d)
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("error %v, want one containing %q", err, c.err)
			}
			if found != c.found || d.A != c.want {
				t.Errorf("found %v, a = %d; want %v, %d", found, d.A, c.found, c.want)
			}
		})
	}
}
