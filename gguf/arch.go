package gguf

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/grpokit/grpokit/model"
)

// ErrUnsupported is returned (wrapped) for a model, dtype or tokenizer a
// GGUF file for llama.cpp cannot hold.
var ErrUnsupported = errors.New("gguf: unsupported")

// family is how one Hugging Face model type is written for llama.cpp.
type family struct {
	// arch is general.architecture, llama.cpp's name of the model graph.
	arch string
	// permuteQK reorders the rows of q_proj and k_proj from HF's
	// rotate-half RoPE layout to the interleaved pairs of llama.cpp's
	// "llama" graph (its RoPE is the original GPT-J style).
	permuteQK bool
	// onePlusNorm stores Gemma's norms as 1 + w: llama.cpp multiplies by the
	// stored weight, Gemma's RMSNorm by (1 + weight).
	onePlusNorm bool
	// sandwich names post_attention_layernorm as the attention output's
	// norm (Gemma) instead of the pre-MLP norm.
	sandwich bool
}

var families = map[string]family{
	"llama":       {arch: "llama", permuteQK: true},
	"qwen2":       {arch: "qwen2"},
	"qwen3":       {arch: "qwen3"},
	"gemma3_text": {arch: "gemma3", onePlusNorm: true, sandwich: true},
	"gemma3":      {arch: "gemma3", onePlusNorm: true, sandwich: true},
}

func lookupFamily(c model.Config) (family, error) {
	f, ok := families[c.ModelType]
	if !ok {
		return family{}, fmt.Errorf("%w: model_type %q (GGUF export knows llama, qwen2, qwen3, gemma3_text and gemma3)", ErrUnsupported, c.ModelType)
	}
	if c.MLPBias {
		return family{}, fmt.Errorf("%w: mlp_bias true: llama.cpp's %s graph has no MLP biases", ErrUnsupported, f.arch)
	}
	if c.ModelType != "llama" && c.AttentionBias {
		return family{}, fmt.Errorf("%w: attention_bias true on %s: llama.cpp's %s graph has no such biases", ErrUnsupported, c.ModelType, f.arch)
	}
	if rs := c.RopeScaling; rs != nil {
		switch k := rs.Kind(); {
		case k == "llama3" && f.arch == "llama":
		case k == "linear" && f.arch == "gemma3":
		default:
			return family{}, fmt.Errorf("%w: rope_scaling type %q on %s", ErrUnsupported, k, c.ModelType)
		}
	}
	return f, nil
}

// llamaCppDifferences lists what llama.cpp's graph for f computes
// differently from the Hugging Face model c: a file is still written, since
// llama.cpp and Ollama load it, but its outputs will not be the model's.
func (f family) llamaCppDifferences(c model.Config) []string {
	var out []string
	if f.arch == "gemma3" && c.SlidingWindow > 0 {
		for i := range c.NumHiddenLayers {
			if c.IsSlidingLayer(i) != ((i+1)%6 != 0) {
				out = append(out, fmt.Sprintf("layer %d is %s, but llama.cpp's gemma3 graph makes every 6th layer "+
					"(layers 5, 11, ...) full attention and all others sliding, whatever the file says; llama.cpp will "+
					"compute a different model than this one (layer_types %v)", i, layerKind(c, i), c.LayerTypes))
				break
			}
		}
	}
	return out
}

func layerKind(c model.Config, i int) string {
	if c.IsSlidingLayer(i) {
		return "sliding_attention"
	}
	return "full_attention"
}

// hyperparameters returns the {arch}.* keys llama.cpp reads for c.
func (f family) hyperparameters(c model.Config) []kv {
	a := f.arch + "."
	m := []kv{
		{a + "context_length", uint32(c.MaxPositionEmbeddings)},
		{a + "embedding_length", uint32(c.HiddenSize)},
		{a + "block_count", uint32(c.NumHiddenLayers)},
		{a + "feed_forward_length", uint32(c.IntermediateSize)},
		{a + "attention.head_count", uint32(c.NumAttentionHeads)},
		{a + "attention.head_count_kv", uint32(c.NumKeyValueHeads)},
		{a + "attention.key_length", uint32(c.HeadDim)},
		{a + "attention.value_length", uint32(c.HeadDim)},
		{a + "attention.layer_norm_rms_epsilon", float32(c.RMSNormEps)},
		{a + "rope.freq_base", float32(c.RopeTheta)},
		{a + "vocab_size", uint32(c.VocabSize)},
	}
	if f.arch == "llama" {
		m = append(m, kv{a + "rope.dimension_count", uint32(c.HeadDim)})
	}
	if f.arch == "gemma3" {
		if c.SlidingWindow > 0 {
			swa := make([]bool, c.NumHiddenLayers)
			for i := range swa {
				swa[i] = c.IsSlidingLayer(i)
			}
			m = append(m, kv{a + "attention.sliding_window", uint32(c.SlidingWindow)},
				kv{a + "attention.sliding_window_pattern", swa})
		}
		if c.RopeLocalBaseFreq > 0 {
			m = append(m, kv{a + "rope.freq_base_swa", float32(c.RopeLocalBaseFreq)})
		}
		if rs := c.RopeScaling; rs != nil && rs.Kind() == "linear" {
			m = append(m, kv{a + "rope.scaling.type", "linear"}, kv{a + "rope.scaling.factor", float32(rs.Factor)})
		}
	}
	return m
}

// tensorName maps an HF weight name (as model.Config.Weights lists it) to
// its GGUF name.
func (f family) tensorName(hf string) (string, error) {
	switch hf {
	case "model.embed_tokens.weight":
		return "token_embd.weight", nil
	case "model.norm.weight":
		return "output_norm.weight", nil
	case "lm_head.weight":
		return "output.weight", nil
	}
	rest, ok := strings.CutPrefix(hf, "model.layers.")
	if !ok {
		return "", fmt.Errorf("gguf: no GGUF name for tensor %q", hf)
	}
	num, module, ok := strings.Cut(rest, ".")
	if _, err := strconv.Atoi(num); !ok || err != nil {
		return "", fmt.Errorf("gguf: no GGUF name for tensor %q", hf)
	}
	mod, suffix, _ := strings.Cut(module, ".weight")
	if suffix != "" || !strings.HasSuffix(module, ".weight") {
		mod, _, _ = strings.Cut(module, ".bias")
		suffix = ".bias"
	} else {
		suffix = ".weight"
	}
	names := map[string]string{
		"input_layernorm":            "attn_norm",
		"self_attn.q_proj":           "attn_q",
		"self_attn.k_proj":           "attn_k",
		"self_attn.v_proj":           "attn_v",
		"self_attn.o_proj":           "attn_output",
		"self_attn.q_norm":           "attn_q_norm",
		"self_attn.k_norm":           "attn_k_norm",
		"post_attention_layernorm":   "ffn_norm",
		"pre_feedforward_layernorm":  "ffn_norm",
		"post_feedforward_layernorm": "post_ffw_norm",
		"mlp.gate_proj":              "ffn_gate",
		"mlp.up_proj":                "ffn_up",
		"mlp.down_proj":              "ffn_down",
	}
	if f.sandwich {
		names["post_attention_layernorm"] = "post_attention_norm"
	}
	g, ok := names[mod]
	if !ok {
		return "", fmt.Errorf("gguf: no GGUF name for tensor %q", hf)
	}
	return "blk." + num + "." + g + suffix, nil
}

// transform turns an HF tensor's values into what llama.cpp expects under
// the same name, in place.
func (f family) transform(c model.Config, hf string, x []float32) {
	if f.permuteQK {
		switch {
		case strings.HasSuffix(hf, "self_attn.q_proj.weight"), strings.HasSuffix(hf, "self_attn.q_proj.bias"):
			permuteRows(x, c.NumAttentionHeads, c.HeadDim, false)
		case strings.HasSuffix(hf, "self_attn.k_proj.weight"), strings.HasSuffix(hf, "self_attn.k_proj.bias"):
			permuteRows(x, c.NumKeyValueHeads, c.HeadDim, false)
		}
	}
	if f.onePlusNorm && strings.HasSuffix(hf, "norm.weight") {
		scale := float32(1)
		if strings.HasSuffix(hf, "self_attn.q_norm.weight") {
			scale = float32(gemmaQueryScale(c))
		}
		for i := range x {
			x[i] = (1 + x[i]) * scale
		}
	}
}

// gemmaQueryScale is the factor folded into Gemma 3's q_norm so that
// llama.cpp, which scales attention scores by 1/sqrt(head_dim) (by
// 1/sqrt(hidden_size/heads) for its 62-layer "27B" model), computes
// Gemma's 1/sqrt(query_pre_attn_scalar): the norm's output is q, and RoPE
// and q·k are linear in q. It is 1 for every released Gemma 3 size.
func gemmaQueryScale(c model.Config) float64 {
	denom := float64(c.HeadDim)
	if c.NumHiddenLayers == 62 {
		denom = float64(c.HiddenSize / c.NumAttentionHeads)
	}
	if c.QueryPreAttnScalar <= 0 {
		return 1
	}
	return math.Sqrt(denom / c.QueryPreAttnScalar)
}

// permuteRows reorders the rows of a [heads·headDim, cols] matrix (or a
// bias of heads·headDim values) within each head from HF's layout, where
// RoPE pairs row j with row j + headDim/2, to interleaved pairs (2j, 2j+1);
// inverse undoes it. The rows are values, or a quantized matrix's bytes
// (rows of whole blocks).
func permuteRows[T any](x []T, heads, headDim int, inverse bool) {
	rows := heads * headDim
	cols := len(x) / rows
	half := headDim / 2
	src := make([]T, headDim*cols)
	for h := range heads {
		blk := x[h*headDim*cols : (h+1)*headDim*cols]
		copy(src, blk)
		for j := range half {
			for t := range 2 {
				hf, pair := t*half+j, 2*j+t
				if inverse {
					hf, pair = pair, hf
				}
				copy(blk[pair*cols:(pair+1)*cols], src[hf*cols:(hf+1)*cols])
			}
		}
	}
}

// ropeFreqs returns llama.cpp's rope_freqs.weight for Llama 3.1's
// "llama3" RoPE scaling: per frequency, the divisor HF's scaling applies.
func ropeFreqs(c model.Config) []float32 {
	scaled := c.InvFreq()
	out := make([]float32, len(scaled))
	for j := range scaled {
		base := 1 / math.Pow(c.RopeTheta, float64(2*j)/float64(c.HeadDim))
		out[j] = float32(base / scaled[j])
	}
	return out
}
