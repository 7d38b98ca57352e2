package gguf

import (
	"fmt"
	"io"
	"os"

	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/tokenizer"
)

// IsFile reports whether path is a GGUF file: a regular file that starts
// with GGUF's magic. Commands use it to take a .gguf file wherever they
// take a model folder.
func IsFile(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && string(b[:]) == "GGUF"
}

// hfTokenizerFiles are the Hugging Face tokenizer files of the file's
// vocabulary: tokenizer.json and tokenizer_config.json.
func (g *File) hfTokenizerFiles() (map[string][]byte, error) {
	v, err := g.Vocab()
	if err != nil {
		return nil, err
	}
	var hf HFOptions
	if n, ok, err := g.Int(g.archKey("context_length")); err == nil && ok {
		hf.ModelMaxLength = int(n)
	}
	tj, tc, err := v.HFFiles(hf)
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", g.Path, err)
	}
	return map[string][]byte{"tokenizer.json": tj, "tokenizer_config.json": tc}, nil
}

// Pretrained returns the file's tokenizer (File.Vocab as Hugging Face
// files, loaded by tokenizer.LoadFiles), with the special token ids of
// generation_config.json that Import writes. WriteFiles of the result
// writes those files, so a run's saved folders load on their own.
func (g *File) Pretrained() (*tokenizer.Pretrained, error) {
	files, err := g.hfTokenizerFiles()
	if err != nil {
		return nil, err
	}
	cfg, err := g.ModelConfig()
	if err != nil {
		return nil, err
	}
	if files["generation_config.json"], err = generationConfig(cfg, g, nil); err != nil {
		return nil, err
	}
	return tokenizer.LoadFiles(g.Path, files)
}

// LoadPretrained reads the GGUF file at path as a model (LoadModel) and
// its tokenizer (File.Pretrained).
func LoadPretrained(path string, opts *model.Options) (*model.Model, *tokenizer.Pretrained, error) {
	g, err := Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer g.Close()
	tok, err := g.Pretrained()
	if err != nil {
		return nil, nil, err
	}
	m, err := g.model(opts)
	if err != nil {
		return nil, nil, err
	}
	return m, tok, nil
}

// archKey is the architecture's key name ("llama.context_length").
func (g *File) archKey(name string) string {
	a, _, _ := g.String("general.architecture")
	return a + "." + name
}
