package gguf

import (
	"fmt"
	"slices"

	"github.com/grpokit/grpokit/model"
)

// Weights returns a model.WeightSource reading cfg's weights (as
// ModelConfig gives it) from the file: each tensor dequantized to float32
// and put back in the Hugging Face layout. The source is valid while the
// file is open.
func (g *File) Weights(cfg model.Config) (model.WeightSource, error) {
	names, fam, err := tensorNames(cfg)
	if err != nil {
		return nil, err
	}
	return func(name string, shape []int) ([]float32, error) {
		gn, ok := names[name]
		if !ok {
			return nil, fmt.Errorf("gguf: %s: no tensor for weight %s", g.Path, name)
		}
		t, ok := g.Tensor(gn)
		if !ok {
			return nil, &FormatError{g.Path, "tensor " + gn, fmt.Errorf("%w: missing (the %s model needs it as %s)", ErrFormat, cfg.ModelType, name)}
		}
		if !slices.Equal(t.Shape, shape) {
			return nil, &FormatError{g.Path, "tensor " + gn, fmt.Errorf("%w: shape %v, but the metadata makes %s %v", ErrFormat, t.Shape, name, shape)}
		}
		x, _, err := g.Float32(gn)
		if err != nil {
			return nil, err
		}
		fam.untransform(cfg, name, x)
		return x, nil
	}, nil
}

// LoadModel reads the GGUF file at path as a model: ModelConfig, then
// every weight dequantized exactly as ggml does and held as opts.Storage
// says (nil opts: float32). LoadPretrained reads the tokenizer too.
func LoadModel(path string, opts *model.Options) (*model.Model, error) {
	g, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	return g.model(opts)
}

// model builds the file's model.
func (g *File) model(opts *model.Options) (*model.Model, error) {
	cfg, err := g.ModelConfig()
	if err != nil {
		return nil, err
	}
	src, err := g.Weights(cfg)
	if err != nil {
		return nil, err
	}
	m, err := model.FromWeights(cfg, src, opts)
	if err != nil {
		return nil, fmt.Errorf("gguf: load %s: %w", g.Path, err)
	}
	return m, nil
}
