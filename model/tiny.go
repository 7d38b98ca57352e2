package model

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/grpokit/grpokit/internal/regfile"
	"github.com/grpokit/grpokit/tokenizer"
)

// TinyConfig is the shape of a small Llama-shaped decoder built from
// scratch (random weights) for toy tasks and tests. Zero fields take the
// defaults shown.
type TinyConfig struct {
	Hidden       int // hidden_size; default 64
	Layers       int // num_hidden_layers; default 2
	Heads        int // num_attention_heads, also the key/value heads; default 4
	Intermediate int // intermediate_size; default 2 × Hidden
	MaxPositions int // max_position_embeddings; default 512
}

// Config returns the model Config of t for a vocabulary of vocab tokens
// with eos as end-of-sequence ids: Llama, SiLU, RMSNorm 1e-5, RoPE θ 10⁴,
// tied embeddings, no BOS.
func (t TinyConfig) Config(vocab int, eos []int) Config {
	hidden := cmp.Or(t.Hidden, 64)
	heads := cmp.Or(t.Heads, 4)
	return Config{
		ModelType: "llama", VocabSize: vocab,
		HiddenSize: hidden, IntermediateSize: cmp.Or(t.Intermediate, 2*hidden),
		NumHiddenLayers: cmp.Or(t.Layers, 2), NumAttentionHeads: heads, NumKeyValueHeads: heads,
		HeadDim: hidden / heads, MaxPositionEmbeddings: cmp.Or(t.MaxPositions, 512),
		RMSNormEps: 1e-5, RopeTheta: 10000, TieWordEmbeddings: true, HiddenAct: "silu",
		BOSTokenID: -1, EOSTokenIDs: append([]int(nil), eos...),
	}
}

// NewTiny builds a tiny model from scratch and its tokenizer, and writes
// both to dir in Hugging Face layout (config.json, model.safetensors,
// tokenizer.json, tokenizer_config.json), so that Load and
// tokenizer.LoadDir read back the same model. The tokenizer is a byte-level
// BPE in which each of words is one token, with ChatML's special tokens and
// chat template (tokenizer.WriteTinyDir); EOS is <|im_end|>. seed fixes the
// random weights. opts may be nil.
//
// What NewTiny writes is the untrained model: name dir so that nobody
// takes it for trained weights (the examples use "initial-model").
func NewTiny(dir string, words []string, t TinyConfig, seed uint64, opts *Options) (*Model, *tokenizer.Pretrained, error) {
	if dir == "" {
		return nil, nil, errors.New("model: NewTiny: empty folder name")
	}
	if h, n := cmp.Or(t.Hidden, 64), cmp.Or(t.Heads, 4); h%n != 0 || (h/n)%2 != 0 {
		return nil, nil, fmt.Errorf("model: NewTiny: hidden %d over %d heads: want an even head size", h, n)
	}
	if err := tokenizer.WriteTinyDir(dir, words); err != nil {
		return nil, nil, fmt.Errorf("model: NewTiny: %w", err)
	}
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("model: NewTiny: %w", err)
	}
	m, err := New(t.Config(tok.Tokenizer.VocabSize(), tok.EOS[:1]), seed, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("model: NewTiny: %w", err)
	}
	if err := m.Save(dir); err != nil {
		return nil, nil, fmt.Errorf("model: NewTiny: %w", err)
	}
	return m, tok, nil
}

// ResumeTiny is NewTiny for a run being resumed: when dir already holds a
// tiny model (the run's untrained model), it builds the model aside and
// checks that it is the same one — config, tokenizer and initial weights,
// compared by content, not by bytes, so that a file another version wrote
// with other formatting still matches — and leaves dir as it was. A
// difference is an error naming the file that differs: the run's
// checkpoints were trained with dir's tokenizer, and a model built from
// changed settings (another dataset's words, another width) would read
// them with another one, or rewrite dir. A dir without a model gets one,
// as from NewTiny.
func ResumeTiny(dir string, words []string, t TinyConfig, seed uint64, opts *Options) (*Model, *tokenizer.Pretrained, error) {
	if _, err := os.Stat(filepath.Join(dir, "config.json")); errors.Is(err, fs.ErrNotExist) {
		return NewTiny(dir, words, t, seed, opts)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dir)), "."+filepath.Base(dir)+".check-")
	if err != nil {
		return nil, nil, fmt.Errorf("model: ResumeTiny: %w", err)
	}
	defer os.RemoveAll(tmp)
	m, tok, err := NewTiny(tmp, words, t, seed, opts)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range []string{"config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors"} {
		same, err := sameContent(filepath.Join(dir, f), filepath.Join(tmp, f))
		if err != nil {
			return nil, nil, fmt.Errorf("model: ResumeTiny: the run's tiny model: %w", err)
		}
		if !same {
			return nil, nil, fmt.Errorf("model: the settings build another tiny model than the run's in %s (%s differs: "+
				"another vocabulary, shape or seed); resume with the run's settings, or start a new run elsewhere", dir, f)
		}
	}
	return m, tok, nil
}

// sameContent compares two files of a model folder by what they say: JSON
// files as decoded values, safetensors files tensor by tensor.
func sameContent(a, b string) (bool, error) {
	if strings.HasSuffix(a, ".safetensors") {
		ta, err := ReadSafetensors(a)
		if err != nil {
			return false, err
		}
		tb, err := ReadSafetensors(b)
		if err != nil {
			return false, err
		}
		return reflect.DeepEqual(ta, tb), nil
	}
	var va, vb any
	for _, f := range []struct {
		path string
		v    *any
	}{{a, &va}, {b, &vb}} {
		data, err := regfile.ReadFile(f.path, regfile.MaxMeta)
		if err != nil {
			return false, err
		}
		if err := json.Unmarshal(data, f.v); err != nil {
			return false, fmt.Errorf("%s: %w", f.path, err)
		}
	}
	return reflect.DeepEqual(va, vb), nil
}
