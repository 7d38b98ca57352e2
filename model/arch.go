package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// arch describes one model family: what differs between Llama, Qwen3 and
// Gemma 3 is data and a few hooks here, while the decoder (decoder.go), the
// loader and generation stay generic. Each family is one file (llama.go,
// qwen3.go, gemma3.go) that builds an arch and registers it in init.
type arch struct {
	// modelType is config.json's model_type; class its "architectures" entry.
	modelType, class string
	// defaults fills a Config with the family's class defaults before
	// config.json is decoded over it (HF writes only non-default keys in some
	// files, e.g. gemma-3-4b-it's text_config).
	defaults func(c *Config)
	// finish derives what config.json may omit, after decoding.
	finish func(c *Config)
	// validate reports family-specific problems (the generic checks run too).
	validate func(c Config) []error
	// layerWeights adds the tensors of decoder layer i besides the
	// projections every family has (q/k/v/o, gate/up/down): norms and biases.
	layerWeights func(c Config, i int, add func(module string, shape ...int))

	// norm is the RMSNorm flavour (w·x̂ or (1+w)·x̂).
	norm normKind
	// qkNorm applies q_norm/k_norm per head over head_dim, before RoPE.
	qkNorm bool
	// sandwich uses Gemma's four norms per layer: post_attention_layernorm
	// on the attention output, pre_ and post_feedforward_layernorm around the
	// MLP. Without it post_attention_layernorm is the pre-MLP norm.
	sandwich bool
	// act is the MLP's gate activation.
	act activation
	// embedScale multiplies the embeddings by sqrt(hidden_size).
	embedScale bool
	// attnScale is the factor of q·k (default 1/sqrt(head_dim)).
	attnScale func(c Config) float64
	// multimodal marks a checkpoint whose language model sits under
	// language_model.* beside a vision tower (loaded text-only).
	multimodal bool
	// saveAs is the text-only model_type a multimodal model is saved as.
	saveAs string
	// qkvBias and oBias report whether the projections carry biases.
	qkvBias, oBias func(c Config) bool
}

// normKind selects the RMSNorm formula.
type normKind int

const (
	// normW is w · x / sqrt(mean(x²) + eps) (Llama, Qwen).
	normW normKind = iota
	// normOnePlusW is (1 + w) · x / sqrt(mean(x²) + eps), computed in f32 (Gemma).
	normOnePlusW
)

// activation selects the MLP gate nonlinearity.
type activation int

const (
	actSiLU     activation = iota // silu(g) · u (SwiGLU)
	actGELUTanh                   // gelu_tanh(g) · u (GeGLU, gelu_pytorch_tanh)
)

var archs = map[string]*arch{}

// register adds a family; a duplicate model_type is a programming error.
func register(a *arch) {
	if _, dup := archs[a.modelType]; dup {
		panic("model: architecture " + a.modelType + " registered twice")
	}
	archs[a.modelType] = a
}

// relatives are model types people ask for that this package does not
// implement, with what sets them apart; the error names them as such.
var relatives = map[string]string{
	"qwen3_moe":    "Qwen3 mixture of experts",
	"qwen2_moe":    "Qwen2 mixture of experts",
	"qwen2_vl":     "Qwen2-VL (vision-language)",
	"qwen2_5_vl":   "Qwen2.5-VL (vision-language)",
	"qwen3_next":   "Qwen3-Next (hybrid attention, experts)",
	"gemma":        "Gemma 1",
	"gemma2":       "Gemma 2 (logit soft-capping)",
	"gemma3n":      "Gemma 3n (per-layer embeddings, AltUp)",
	"gemma3n_text": "Gemma 3n (per-layer embeddings, AltUp)",
	"mistral":      "Mistral (sliding-window Llama variant)",
	"mixtral":      "Mixtral (mixture of experts)",
	"phi3":         "Phi-3 (fused qkv and gate_up projections)",
	"mllama":       "Llama 3.2 Vision",
	"llama4":       "Llama 4 (mixture of experts)",
}

// SupportedModelTypes returns the model_type values Load accepts, sorted.
func SupportedModelTypes() []string { return slices.Sorted(maps.Keys(archs)) }

// lookupArch returns the family for model_type t, or an error wrapping
// ErrUnsupportedArch that names the supported ones.
func lookupArch(t string) (*arch, error) {
	if a, ok := archs[t]; ok {
		return a, nil
	}
	want := strings.Join(SupportedModelTypes(), ", ")
	if what, ok := relatives[t]; ok {
		return nil, fmt.Errorf("%w: model_type %q (%s) is a known relative that is not implemented; supported: %s",
			ErrUnsupportedArch, t, what, want)
	}
	return nil, fmt.Errorf("%w: model_type %q (want one of %s)", ErrUnsupportedArch, t, want)
}

// arch returns the configuration's family (nil when unknown: Validate
// reports that).
func (c Config) arch() *arch { return archs[c.ModelType] }

func noBias(Config) bool { return false }
