package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		path  string
		limit int64
		want  string
		err   error
	}{
		{"regular", p, 10, "0123456789", nil},
		{"over the bound", p, 9, "", ErrTooLarge},
		{"folder", dir, 100, "", ErrNotRegular},
		{"missing", filepath.Join(dir, "none"), 100, "", os.ErrNotExist},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadFile(c.path, c.limit)
			if c.err != nil {
				if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.path) {
					t.Fatalf("ReadFile = %q, %v; want an error wrapping %v naming %s", got, err, c.err, c.path)
				}
				return
			}
			if err != nil || string(got) != c.want {
				t.Fatalf("ReadFile = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
