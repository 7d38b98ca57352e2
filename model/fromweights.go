package model

import (
	"errors"
	"fmt"
	"slices"
)

// WeightSource returns the values of one weight by its Hugging Face name
// (as Config.Weights lists it, with its shape), in float32, row-major,
// in a fresh slice the caller may keep or change.
type WeightSource func(name string, shape []int) ([]float32, error)

// FromWeights builds a model for cfg whose weights come from src, one
// tensor at a time, held as opts.Storage says (as Load does for a
// safetensors folder): the way to load weights stored in another format,
// such as a GGUF file (package gguf). Every weight cfg needs is asked for
// once; all failures are reported together. It registers the fast
// DotGeneral gradient (internal/vjp) for the process.
func FromWeights(cfg Config, src WeightSource, opts *Options) (*Model, error) {
	m, err := newEmpty(cfg, opts)
	if err != nil {
		return nil, err
	}
	st, dq := opts.storage()
	var errs []error
	for _, w := range m.cfg.Weights() {
		if m.decoderOnly && w.Name == "lm_head.weight" {
			continue
		}
		data, err := src(w.Name, slices.Clone(w.Shape))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if n := numel(w.Shape); len(data) != n {
			errs = append(errs, fmt.Errorf("model: weight %s: %d values, want %d (shape %v)", w.Name, len(data), n, w.Shape))
			continue
		}
		if err := m.storeAs(w.Name, data, w.Shape, st.formatFor(w.Name, w.Shape, "F32"), dq); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("model: %w", errors.Join(errs...))
	}
	return m, nil
}
