package gguf

import (
	"fmt"
	"slices"

	"github.com/grpokit/grpokit/internal/quant"
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

// Blocks returns a model.BlockSource of cfg's weights (as ModelConfig
// gives it) in the file: each tensor's type and, for Q4_0, Q4_1, Q8_0 and
// Q4_K, its stored blocks, with Llama's q_proj/k_proj rows put back in the
// Hugging Face order (a row is whole blocks, so whole rows of blocks
// move). The source is valid while the file is open.
func (g *File) Blocks(cfg model.Config) (model.BlockSource, error) {
	names, fam, err := tensorNames(cfg)
	if err != nil {
		return nil, err
	}
	return func(name string, shape []int) (string, []byte, error) {
		gn, ok := names[name]
		if !ok {
			return "", nil, fmt.Errorf("gguf: %s: no tensor for weight %s", g.Path, name)
		}
		t, ok := g.Tensor(gn)
		if !ok {
			return "", nil, &FormatError{g.Path, "tensor " + gn, fmt.Errorf("%w: missing (the %s model needs it as %s)", ErrFormat, cfg.ModelType, name)}
		}
		if !slices.Equal(t.Shape, shape) {
			return "", nil, &FormatError{g.Path, "tensor " + gn, fmt.Errorf("%w: shape %v, but the metadata makes %s %v", ErrFormat, t.Shape, name, shape)}
		}
		typ := t.Type.String()
		if _, blocks := quant.ParseGGML(typ); !blocks || len(shape) != 2 {
			return typ, nil, nil
		}
		b, _, err := g.Raw(gn)
		if err != nil {
			return "", nil, err
		}
		if want := t.Type.size(t.numel()); int64(len(b)) != want {
			return "", nil, &FormatError{g.Path, "tensor " + gn, fmt.Errorf("%w: %d bytes of %s, want %d", ErrFormat, len(b), typ, want)}
		}
		fam.unpermuteBlocks(cfg, name, b)
		return typ, b, nil
	}, nil
}

// HeldBytes returns the bytes cfg's weights (as ModelConfig gives it) take
// when the file is loaded under storage s (model.Storage): under
// model.StorageGGUF each Q4_0, Q4_1, Q8_0 or Q4_K matrix counts its
// blocks' bytes, tensor by tensor; under any other storage it is
// model.Config.HeldBytes for the file's largest matrix type.
func (g *File) HeldBytes(cfg model.Config, s model.Storage, doubleQuant bool) (int64, error) {
	names, _, err := tensorNames(cfg)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, w := range cfg.Weights() {
		t, ok := g.Tensor(names[w.Name])
		if !ok {
			if w.Name == "lm_head.weight" && cfg.TieWordEmbeddings {
				continue
			}
			return 0, fmt.Errorf("gguf: %s: no tensor for weight %s", g.Path, w.Name)
		}
		total += model.WeightHeldBytes(w.Name, w.Shape, s, t.Type.String(), doubleQuant)
	}
	return total, nil
}

// LoadModel reads the GGUF file at path as a model: ModelConfig, then
// every weight dequantized exactly as ggml does and held as opts.Storage
// says (nil opts: float32); under model.StorageGGUF the Q4_0, Q4_1, Q8_0
// and Q4_K matrices keep the file's blocks (model.FromBlocks).
// LoadPretrained reads the tokenizer too.
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
	blocks, err := g.Blocks(cfg)
	if err != nil {
		return nil, err
	}
	m, err := model.FromBlocks(cfg, src, blocks, opts)
	if err != nil {
		return nil, fmt.Errorf("gguf: load %s: %w", g.Path, err)
	}
	return m, nil
}
