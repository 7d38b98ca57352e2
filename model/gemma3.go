package model

import (
	"fmt"
	"math"
)

// gemma3.go: Gemma 3's language model, as transformers' modeling_gemma3.py
// computes it: (1+w) RMSNorms in f32 (q_norm/k_norm included), four norms
// per layer (post_attention_layernorm on the attention output, pre_ and
// post_feedforward_layernorm around the MLP), GeGLU with the tanh GELU,
// embeddings × sqrt(hidden_size), scores scaled by
// query_pre_attn_scalar^-1/2, and sliding-window layers (rope base
// rope_local_base_freq) interleaved with full ones (rope_theta, scaled by
// rope_scaling). The head is tied (Gemma3TextConfig's default).
//
// Two model types: gemma3_text (Gemma3ForCausalLM: gemma-3-270m, -1b) and
// gemma3 (Gemma3ForConditionalGeneration: gemma-3-4b/12b/27b), whose
// config.json nests the text settings in a sparse text_config and whose
// weights keep the language model under language_model.model.*; its vision
// tower and projector are skipped.

func init() {
	text := gemma3Arch("gemma3_text", "Gemma3ForCausalLM")
	register(text)
	mm := gemma3Arch("gemma3", "Gemma3ForConditionalGeneration")
	mm.multimodal, mm.saveAs = true, "gemma3_text"
	register(mm)
}

func gemma3Arch(modelType, class string) *arch {
	return &arch{
		modelType: modelType, class: class,
		defaults:     gemma3Defaults,
		finish:       gemma3Finish,
		validate:     gemma3Validate,
		layerWeights: gemma3Norms,
		norm:         normOnePlusW,
		qkNorm:       true,
		sandwich:     true,
		act:          actGELUTanh,
		embedScale:   true,
		attnScale:    func(c Config) float64 { return 1 / math.Sqrt(c.QueryPreAttnScalar) },
		qkvBias:      func(c Config) bool { return c.AttentionBias },
		oBias:        func(c Config) bool { return c.AttentionBias },
	}
}

// gemma3Defaults are Gemma3TextConfig's defaults (transformers 4.50–4.57):
// the real gemma-3-4b-it text_config lists only six keys and relies on them.
func gemma3Defaults(c *Config) {
	*c = Config{
		VocabSize: 262208, HiddenSize: 2304, IntermediateSize: 9216, NumHiddenLayers: 26,
		NumAttentionHeads: 8, NumKeyValueHeads: 4, HeadDim: 256,
		HiddenActivation: "gelu_pytorch_tanh", MaxPositionEmbeddings: 131072, RMSNormEps: 1e-6,
		BOSTokenID: 2, EOSTokenIDs: []int{1}, TieWordEmbeddings: true,
		RopeTheta: 1e6, RopeLocalBaseFreq: 1e4, QueryPreAttnScalar: 256, SlidingWindow: 4096,
	}
}

// gemma3Finish derives layer_types from sliding_window_pattern (default 6)
// when the file has no layer_types: layer i is full iff (i+1) % pattern == 0.
func gemma3Finish(c *Config) {
	if len(c.LayerTypes) > 0 {
		return
	}
	p := c.SlidingWindowPattern
	if p == 0 {
		p = 6
	}
	if p < 0 {
		return // Validate reports it
	}
	c.LayerTypes = make([]string, c.NumHiddenLayers)
	for i := range c.LayerTypes {
		c.LayerTypes[i] = "sliding_attention"
		if (i+1)%p == 0 {
			c.LayerTypes[i] = "full_attention"
		}
	}
}

func gemma3Validate(c Config) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("model: config: "+format, args...)) }
	if c.HiddenActivation != "gelu_pytorch_tanh" {
		errs = append(errs, fmt.Errorf("%w: hidden_activation %q (want gelu_pytorch_tanh)", ErrUnsupportedArch, c.HiddenActivation))
	}
	if c.AttnLogitSoftcapping != nil || c.FinalLogitSoftcapping != nil {
		errs = append(errs, fmt.Errorf("%w: logit soft-capping (Gemma 3 configs leave it null)", ErrUnsupportedArch))
	}
	if c.SlidingWindowPattern < 0 {
		bad("sliding_window_pattern = %d, want > 0", c.SlidingWindowPattern)
	}
	if len(c.LayerTypes) != c.NumHiddenLayers {
		bad("layer_types has %d entries for %d layers", len(c.LayerTypes), c.NumHiddenLayers)
	}
	for i, t := range c.LayerTypes {
		if t != "sliding_attention" && t != "full_attention" {
			bad("layer_types[%d] = %q, want sliding_attention or full_attention", i, t)
		}
	}
	if c.SlidingWindow <= 0 {
		bad("sliding_window = %d, want > 0", c.SlidingWindow)
	}
	if c.QueryPreAttnScalar <= 0 {
		bad("query_pre_attn_scalar = %g, want > 0", c.QueryPreAttnScalar)
	}
	if c.RopeLocalBaseFreq <= 0 {
		bad("rope_local_base_freq = %g, want > 0", c.RopeLocalBaseFreq)
	}
	if c.UseBidirectionalAttention {
		errs = append(errs, fmt.Errorf("%w: use_bidirectional_attention (EmbeddingGemma)", ErrUnsupportedArch))
	}
	return errs
}

// gemma3Norms adds a Gemma 3 layer's six norms.
func gemma3Norms(c Config, _ int, add func(module string, shape ...int)) {
	h := c.HiddenSize
	add("input_layernorm.weight", h)
	add("self_attn.q_norm.weight", c.HeadDim)
	add("self_attn.k_norm.weight", c.HeadDim)
	add("post_attention_layernorm.weight", h)
	add("pre_feedforward_layernorm.weight", h)
	add("post_feedforward_layernorm.weight", h)
}
