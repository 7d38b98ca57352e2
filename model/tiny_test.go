package model_test

import (
	"slices"
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
