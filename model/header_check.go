package model

import (
	"fmt"
	"strconv"
	"strings"
)

// CheckWeightsHeader compares cfg's sizes with the safetensors headers of
// the checkpoint in dir, reading the headers only: the layer count and the
// embedding's shape must agree before anything is built or planned in
// proportion to them. opts may be nil.
func CheckWeightsHeader(dir string, cfg Config, opts *Options) error {
	files, err := weightFiles(dir, opts)
	if err != nil {
		return err
	}
	layers := 0
	var embed []int
	for _, path := range files {
		s, err := openSafetensors(path)
		if err != nil {
			return err
		}
		for name, ti := range s.header.Tensors {
			canon, vision := cfg.CanonicalName(name)
			if vision {
				continue
			}
			if canon == "model.embed_tokens.weight" {
				embed = ti.Shape
			}
			if rest, ok := strings.CutPrefix(canon, "model.layers."); ok {
				if i := strings.IndexByte(rest, '.'); i > 0 {
					if n, err := strconv.Atoi(rest[:i]); err == nil && n >= 0 && n+1 > layers {
						layers = n + 1
					}
				}
			}
		}
		s.Close()
	}
	if cfg.NumHiddenLayers > layers {
		return fmt.Errorf("model: %s: config.json has num_hidden_layers = %d but the weights hold %d layers", dir, cfg.NumHiddenLayers, layers)
	}
	if embed != nil && (len(embed) != 2 || embed[0] != cfg.VocabSize || embed[1] != cfg.HiddenSize) {
		return fmt.Errorf("model: %s: config.json has vocab_size = %d and hidden_size = %d but the weights' model.embed_tokens.weight is %v",
			dir, cfg.VocabSize, cfg.HiddenSize, embed)
	}
	return nil
}
