package sharedtest

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TokenizerJSON returns the tokenizer.json of fixture name (qwen3,
// llama31, gemma3, …), which ../shared/tokenizers holds gzipped; it skips
// t as Dir does when the fixtures are absent.
func TokenizerJSON(t testing.TB, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join(Dir(t, "tokenizers"), name+".tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// WriteTokenizer writes fixture name's tokenizer files into dir (which
// must exist) as a Hugging Face model folder holds them: tokenizer.json
// and tokenizer_config.json.
func WriteTokenizer(t testing.TB, dir, name string) {
	t.Helper()
	tok := TokenizerJSON(t, name)
	cfg, err := os.ReadFile(filepath.Join(Dir(t, "tokenizers"), name+".tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
}
