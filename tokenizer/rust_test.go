//go:build tokenizers_rust

package tokenizer

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestRustBackendFixtures runs only with -tags tokenizers_rust, where
// libtokenizers.a can be linked.
func TestRustBackendFixtures(t *testing.T) {
	f := fixtures(t)
	for _, m := range fixtureModels {
		fh, err := os.Open(filepath.Join(sharedDir(), "tokenizers", m+".tokenizer.json.gz"))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(fh)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(zr)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewRust(data)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range f.corpus {
			if got := r.Encode(s, false); !equalInts(got, f.golden[m].IDs[i]) {
				t.Errorf("%s: rust encode %q: %v", m, s, got)
			}
			if got := r.Decode(f.golden[m].IDs[i], false); got != f.golden[m].Decoded[i] {
				t.Errorf("%s: rust decode %q: %q", m, s, got)
			}
		}
	}
}
