package gguf

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/model"
)

func tinyLlama() model.Config {
	return model.Config{ModelType: "llama", VocabSize: 40, HiddenSize: 32, IntermediateSize: 64,
		NumHiddenLayers: 1, NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 16,
		MaxPositionEmbeddings: 64, RMSNormEps: 1e-5, RopeTheta: 10000, TieWordEmbeddings: true,
		HiddenAct: "silu", BOSTokenID: 1, EOSTokenIDs: []int{2}}
}

func ones(cfg model.Config) WeightFunc {
	return func(name string) ([]float32, error) {
		for _, w := range cfg.Weights() {
			if w.Name == name {
				n := 1
				for _, d := range w.Shape {
					n *= d
				}
				x := make([]float32, n)
				for i := range x {
					x[i] = 1
				}
				return x, nil
			}
		}
		return nil, errors.New("no such weight")
	}
}

// TestWriteLeavesNothingHalfWritten: a weight that fails halfway through
// the file leaves no file and no temporary file; an existing file stays as
// it was unless Overwrite.
func TestWriteLeavesNothingHalfWritten(t *testing.T) {
	cfg := tinyLlama()
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	vocab := PlaceholderVocab(cfg.VocabSize, 1, 2, -1)
	failing := func(name string) ([]float32, error) {
		if strings.Contains(name, "mlp.down_proj") {
			return nil, errors.New("disk on fire")
		}
		return ones(cfg)(name)
	}
	_, err := Write(context.Background(), path, cfg, failing, Options{DType: "Q8_0", Vocab: vocab})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") || !strings.Contains(err.Error(), "mlp.down_proj") {
		t.Fatalf("err = %v, want the weight's error naming it", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}

	if err := os.WriteFile(path, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Write(context.Background(), path, cfg, ones(cfg), Options{DType: "F16", Vocab: vocab})
	if !errors.Is(err, ErrExists) {
		t.Fatalf("err = %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "keep" {
		t.Fatalf("the existing file changed to %q", b)
	}
	res, err := Write(context.Background(), path, cfg, ones(cfg), Options{DType: "F16", Vocab: vocab, Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() != res.Bytes {
		t.Fatalf("stat %v, size %d, want %d", err, st.Size(), res.Bytes)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("want only m.gguf, have %v", entries)
	}
}

// TestWriteRefuses: what a GGUF file for llama.cpp cannot hold is an
// error naming it, before anything is written.
func TestWriteRefuses(t *testing.T) {
	cfg := tinyLlama()
	vocab := PlaceholderVocab(cfg.VocabSize, 1, 2, -1)
	withQwenBias := cfg
	withQwenBias.ModelType, withQwenBias.AttentionBias = "qwen3", true
	scaled := cfg
	scaled.RopeScaling = &model.RopeScaling{RopeType: "yarn", Factor: 4}
	cases := []struct {
		name    string
		cfg     model.Config
		opts    Options
		wantErr string
	}{
		{"dtype", cfg, Options{DType: "Q4_K", Vocab: vocab}, `dtype "Q4_K"`},
		{"no vocabulary", cfg, Options{DType: "F16"}, "Vocab is required"},
		{"vocabulary of another size", cfg, Options{DType: "F16", Vocab: PlaceholderVocab(39, 1, 2, -1)}, "39 tokens"},
		{"qwen3 attention biases", withQwenBias, Options{DType: "F16", Vocab: vocab}, "attention_bias"},
		{"rope scaling llama.cpp's graph does not take from this file", scaled, Options{DType: "F16", Vocab: vocab}, `rope_scaling type "yarn"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Write(context.Background(), filepath.Join(dir, "m.gguf"), c.cfg, ones(c.cfg), c.opts)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want one mentioning %q", err, c.wantErr)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("left behind: %v", entries)
			}
		})
	}
}
