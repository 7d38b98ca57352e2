package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/grpokit/grpokit/model"
)

// TestMeasureTiny runs the timing on a tiny model: every sequence must
// generate its full length (end-of-sequence ignored) and the figures be
// positive and finite.
func TestMeasureTiny(t *testing.T) {
	words := make([]string, 300) // a vocabulary above the ids' offset of 100
	for i := range words {
		words[i] = "w" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	m, _, err := model.NewTiny(t.TempDir(), words, model.TinyConfig{Hidden: 16, Layers: 1}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := measure(m, 3, 5, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Batch != 3 || !(r.PrefillTokS > 0) || !(r.DecodeTokS > 0) || r.DecodeSecond <= 0 {
		t.Errorf("result %+v", r)
	}
}

func TestReadLlama(t *testing.T) {
	path := filepath.Join(t.TempDir(), "llama.json")
	if err := os.WriteFile(path, []byte(`{"results": [{"batch": 8, "threads": 2, "prefill_tok_s": 900.5, "decode_tok_s": 120}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readLlama(path)
	if err != nil {
		t.Fatal(err)
	}
	if r := got[8]; r.Threads != 2 || r.PrefillTokS != 900.5 || r.DecodeTokS != 120 {
		t.Errorf("got %+v", got)
	}
	if _, err := readLlama(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a missing file gave no error")
	}
}
