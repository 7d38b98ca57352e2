package model_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/model"
)

func TestNewTiny(t *testing.T) {
	dir := t.TempDir()
	m, tok, err := model.NewTiny(dir, []string{"apple", "pear"}, model.TinyConfig{Hidden: 32}, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := m.Config()
	if cfg.HiddenSize != 32 || cfg.IntermediateSize != 64 || cfg.NumHiddenLayers != 2 || cfg.HeadDim != 8 ||
		cfg.VocabSize != tok.Tokenizer.VocabSize() || !slices.Equal(cfg.EOSTokenIDs, tok.EOS[:1]) {
		t.Errorf("config %+v", cfg)
	}
	if ids := tok.Tokenizer.Encode("apple", false); len(ids) != 1 {
		t.Errorf("\"apple\" encodes to %v, want one token", ids)
	}
	back, err := model.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range cfg.Weights() {
		a, _, err := m.Weight(w.Name)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := back.Weight(w.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a, b) {
			t.Errorf("%s differs after Load", w.Name)
		}
	}
	if _, _, err := model.NewTiny(t.TempDir(), nil, model.TinyConfig{Hidden: 30, Heads: 4}, 1, nil); err == nil {
		t.Error("hidden 30 over 4 heads: no error")
	}
}

// TestResumeTiny: the same settings give the run's model (whatever the
// formatting of its files) and leave its folder as it was; another vocabulary, width or seed is an error naming
// the file that differs, and the folder stays the run's.
func TestResumeTiny(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "initial-model")
	words, shape := []string{"apple", "pear"}, model.TinyConfig{Hidden: 32}
	if _, _, err := model.ResumeTiny(dir, words, shape, 7, nil); err != nil { // a new run: written
		t.Fatal(err)
	}
	// Another version may write the same files formatted otherwise: the
	// comparison is by content.
	for _, f := range []string{"config.json", "tokenizer.json"} {
		var v any
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err == nil {
			err = json.Unmarshal(data, &v)
		}
		if err == nil {
			data, err = json.MarshalIndent(v, "", "\t")
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f), data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	saved := map[string][]byte{}
	for _, f := range []string{"config.json", "tokenizer.json", "model.safetensors"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		saved[f] = data
	}
	cases := []struct {
		name  string
		words []string
		shape model.TinyConfig
		seed  uint64
		want  string // "" for no error, else the file named
	}{
		{"same settings", words, shape, 7, ""},
		{"another word (dataset)", []string{"apple", "plum"}, shape, 7, "tokenizer.json"},
		{"another width", words, model.TinyConfig{Hidden: 16}, 7, "config.json"},
		{"another seed", words, shape, 8, "model.safetensors"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, tok, err := model.ResumeTiny(dir, c.words, c.shape, c.seed, nil)
			switch {
			case c.want == "" && err != nil:
				t.Fatal(err)
			case c.want == "" && (m == nil || tok.Tokenizer.VocabSize() != m.Config().VocabSize):
				t.Errorf("model %v, tokenizer %v", m, tok)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("err = %v, want one naming %s", err, c.want)
			}
			for f, want := range saved {
				if got, err := os.ReadFile(filepath.Join(dir, f)); err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s changed (%v)", f, err)
				}
			}
			entries, _ := os.ReadDir(filepath.Dir(dir))
			if len(entries) != 1 {
				t.Errorf("left beside the run's model: %v", entries)
			}
		})
	}
}
