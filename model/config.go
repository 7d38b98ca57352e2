package model

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/grpokit/grpokit/internal/regfile"
)

// ErrUnsupportedArch is returned (wrapped) when config.json names a
// model_type, activation or feature this package does not implement.
var ErrUnsupportedArch = errors.New("model: unsupported architecture")

// RopeScaling is config.json's rope_scaling object. Only the "llama3" type
// (Llama 3.1/3.2) is supported; a null rope_scaling means none.
type RopeScaling struct {
	// RopeType is "llama3" (HF writes it as rope_type; older files use type).
	RopeType string `json:"rope_type,omitempty"`
	// Type is the legacy spelling of RopeType.
	Type string `json:"type,omitempty"`
	// Factor divides the low frequencies (8 for Llama 3.1).
	Factor float64 `json:"factor,omitempty"`
	// LowFreqFactor and HighFreqFactor bound the smoothly scaled band (1 and 4).
	LowFreqFactor  float64 `json:"low_freq_factor,omitempty"`
	HighFreqFactor float64 `json:"high_freq_factor,omitempty"`
	// OriginalMaxPositionEmbeddings is the pre-training context (8192).
	OriginalMaxPositionEmbeddings int `json:"original_max_position_embeddings,omitempty"`
}

// Kind returns the scaling type, whichever key the file used.
func (r *RopeScaling) Kind() string {
	if r.RopeType != "" {
		return r.RopeType
	}
	return r.Type
}

// Config is the subset of a Hugging Face config.json that defines a decoder
// of one of the supported families (SupportedModelTypes). Field names and
// json tags copy HF's. For a multimodal checkpoint (model_type "gemma3")
// the fields hold its text_config, with Gemma's defaults filled in.
type Config struct {
	// ModelType is config.json's model_type: "llama", "qwen2", "qwen3",
	// "gemma3_text", or "gemma3" (multimodal checkpoint, language model only).
	ModelType             string  `json:"model_type"`
	VocabSize             int     `json:"vocab_size"`
	HiddenSize            int     `json:"hidden_size"`
	IntermediateSize      int     `json:"intermediate_size"`
	NumHiddenLayers       int     `json:"num_hidden_layers"`
	NumAttentionHeads     int     `json:"num_attention_heads"`
	NumKeyValueHeads      int     `json:"num_key_value_heads"`
	HeadDim               int     `json:"head_dim,omitempty"` // 0 means HiddenSize / NumAttentionHeads
	MaxPositionEmbeddings int     `json:"max_position_embeddings"`
	RMSNormEps            float64 `json:"rms_norm_eps"`
	// RopeTheta is the RoPE base (of the full-attention layers for Gemma 3).
	RopeTheta float64 `json:"rope_theta"`
	// RopeScaling is nil when config.json has none (or null).
	RopeScaling       *RopeScaling `json:"rope_scaling"`
	TieWordEmbeddings bool         `json:"tie_word_embeddings"`
	// AttentionBias puts biases on q/k/v/o (Llama). Qwen2 always has q/k/v biases.
	AttentionBias bool `json:"attention_bias,omitempty"`
	MLPBias       bool `json:"mlp_bias,omitempty"`
	// HiddenAct is the MLP activation of Llama and Qwen ("silu").
	HiddenAct string `json:"hidden_act,omitempty"`
	// HiddenActivation is Gemma's name for it ("gelu_pytorch_tanh").
	HiddenActivation string `json:"hidden_activation,omitempty"`
	// BOSTokenID is the begin-of-sequence id, -1 if unknown.
	BOSTokenID int `json:"bos_token_id"`
	// EOSTokenIDs holds eos_token_id, which HF writes as a number or a list.
	EOSTokenIDs      []int `json:"-"`
	UseSlidingWindow bool  `json:"use_sliding_window,omitempty"`
	// SlidingWindow is the number of keys (the query's own included) a
	// sliding-attention layer sees (Gemma 3).
	SlidingWindow int `json:"sliding_window,omitempty"`
	// SlidingWindowPattern: layer i is full attention iff (i+1) % pattern == 0
	// (Gemma 3 configs written before layer_types existed; default 6).
	SlidingWindowPattern int `json:"sliding_window_pattern,omitempty"`
	// LayerTypes lists "sliding_attention" or "full_attention" per layer.
	// Gemma 3 derives it from SlidingWindowPattern when absent.
	LayerTypes []string `json:"layer_types,omitempty"`
	// RopeLocalBaseFreq is the RoPE base of Gemma 3's sliding layers (never scaled).
	RopeLocalBaseFreq float64 `json:"rope_local_base_freq,omitempty"`
	// QueryPreAttnScalar: Gemma scales scores by its -1/2 power, not head_dim's.
	QueryPreAttnScalar float64 `json:"query_pre_attn_scalar,omitempty"`
	// Soft-capping (Gemma 2) is not implemented: it must be null.
	AttnLogitSoftcapping  *float64 `json:"attn_logit_softcapping,omitempty"`
	FinalLogitSoftcapping *float64 `json:"final_logit_softcapping,omitempty"`
	// UseBidirectionalAttention (EmbeddingGemma) is not implemented.
	UseBidirectionalAttention bool   `json:"use_bidirectional_attention,omitempty"`
	TorchDType                string `json:"torch_dtype,omitempty"`
}

// ParseConfig decodes a config.json and validates it. Unknown model types
// give an error wrapping ErrUnsupportedArch that names the supported ones.
// A multimodal file's text_config is read, over the family's defaults.
func ParseConfig(data []byte) (Config, error) {
	var top struct {
		ModelType  string          `json:"model_type"`
		TextConfig json.RawMessage `json:"text_config"`
		EOS        json.RawMessage `json:"eos_token_id"`
		TorchDType string          `json:"torch_dtype"`
		DType      string          `json:"dtype"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return Config{}, fmt.Errorf("model: parse config.json: %w", err)
	}
	a, err := lookupArch(top.ModelType)
	if err != nil {
		return Config{ModelType: top.ModelType}, err
	}
	c := Config{BOSTokenID: -1, RopeTheta: 10000, RMSNormEps: 1e-6}
	if a.defaults != nil {
		a.defaults(&c)
	}
	body := data
	if a.multimodal {
		if len(top.TextConfig) == 0 || string(top.TextConfig) == "null" {
			return c, fmt.Errorf("model: config.json: model_type %q needs a text_config", top.ModelType)
		}
		body = top.TextConfig
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("model: parse config.json: %w", err)
	}
	c.ModelType = top.ModelType
	var raw struct {
		EOS     json.RawMessage `json:"eos_token_id"`
		Pattern int             `json:"_sliding_window_pattern"`
		DType   string          `json:"dtype"`
		// An explicit 0 is a broken file, not the derived default that
		// an absent (or null) key means.
		HeadDim *int `json:"head_dim"`
		NumKV   *int `json:"num_key_value_heads"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return c, fmt.Errorf("model: parse config.json: %w", err)
	}
	var explicit []error
	if raw.HeadDim != nil && *raw.HeadDim <= 0 {
		explicit = append(explicit, fmt.Errorf("model: config: head_dim = %d, want > 0 (leave it out for hidden_size / num_attention_heads)", *raw.HeadDim))
	}
	if raw.NumKV != nil && *raw.NumKV <= 0 {
		explicit = append(explicit, fmt.Errorf("model: config: num_key_value_heads = %d, want > 0 (leave it out for num_attention_heads)", *raw.NumKV))
	}
	// transformers 4.56 and later write "dtype" for "torch_dtype"; a
	// multimodal checkpoint may give it at the top level only.
	c.TorchDType = cmp.Or(c.TorchDType, raw.DType, top.TorchDType, top.DType)
	if c.SlidingWindowPattern == 0 {
		c.SlidingWindowPattern = raw.Pattern
	}
	eos := raw.EOS
	if a.multimodal && len(top.EOS) > 0 && string(top.EOS) != "null" {
		eos = top.EOS // the top level's list wins over text_config's
	}
	if len(eos) > 0 && string(eos) != "null" {
		var one int
		if err := json.Unmarshal(eos, &one); err == nil {
			c.EOSTokenIDs = []int{one}
		} else if err := json.Unmarshal(eos, &c.EOSTokenIDs); err != nil {
			return c, fmt.Errorf("model: config.json: eos_token_id %s is neither a number nor a list", eos)
		}
	}
	c = c.withDefaults()
	return c, errors.Join(append(explicit, c.Validate())...)
}

// Bounds on config.json's sizes that no real checkpoint comes near: a
// file past them is corrupt or hostile, and planning or building a model
// of its size would exhaust the machine before the weights could disagree.
const (
	maxLayers    = 1 << 14
	maxDimension = 1 << 20 // hidden_size, intermediate_size, head_dim, heads
	maxVocab     = 1 << 24
	maxPositions = 1 << 26
)

// withDefaults fills the fields HF derives when absent: num_key_value_heads
// (= num_attention_heads), head_dim (= hidden_size / num_attention_heads)
// and the family's own (Gemma's layer_types).
func (c Config) withDefaults() Config {
	if c.NumKeyValueHeads == 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	if c.HeadDim == 0 && c.NumAttentionHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	if a := c.arch(); a != nil && a.finish != nil {
		a.finish(&c)
	}
	return c
}

// ReadConfig reads and validates path (a config.json).
func ReadConfig(path string) (Config, error) {
	data, err := regfile.ReadFile(path, regfile.MaxMeta)
	if err != nil {
		return Config{}, fmt.Errorf("model: read config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return c, fmt.Errorf("%w (in %s)", err, path)
	}
	return c, nil
}

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	a, err := lookupArch(c.ModelType)
	if err != nil {
		return err
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("model: config: "+format, args...)) }
	for _, f := range []struct {
		name string
		v    int
	}{
		{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize},
		{"num_hidden_layers", c.NumHiddenLayers}, {"num_attention_heads", c.NumAttentionHeads},
		{"num_key_value_heads", c.NumKeyValueHeads}, {"head_dim", c.HeadDim},
	} {
		if f.v <= 0 {
			bad("%s = %d, want > 0", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name  string
		v, at int
	}{
		{"vocab_size", c.VocabSize, maxVocab}, {"hidden_size", c.HiddenSize, maxDimension},
		{"intermediate_size", c.IntermediateSize, maxDimension}, {"num_hidden_layers", c.NumHiddenLayers, maxLayers},
		{"num_attention_heads", c.NumAttentionHeads, maxDimension}, {"num_key_value_heads", c.NumKeyValueHeads, maxDimension},
		{"head_dim", c.HeadDim, maxDimension}, {"max_position_embeddings", c.MaxPositionEmbeddings, maxPositions},
	} {
		if f.v > f.at {
			bad("%s = %d, more than %d: the file is corrupt", f.name, f.v, f.at)
		}
	}
	if c.MaxPositionEmbeddings < 0 {
		bad("max_position_embeddings = %d, want > 0", c.MaxPositionEmbeddings)
	}
	for _, id := range c.EOSTokenIDs {
		if id < 0 || (c.VocabSize > 0 && id >= c.VocabSize) {
			bad("eos_token_id %d is outside the vocabulary (vocab_size %d)", id, c.VocabSize)
		}
	}
	if c.VocabSize > 0 && c.BOSTokenID >= c.VocabSize {
		bad("bos_token_id %d is outside the vocabulary (vocab_size %d)", c.BOSTokenID, c.VocabSize)
	}
	if c.NumKeyValueHeads > 0 && c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		bad("num_attention_heads %d is not a multiple of num_key_value_heads %d", c.NumAttentionHeads, c.NumKeyValueHeads)
	}
	if c.HeadDim%2 != 0 {
		bad("head_dim %d is odd (RoPE needs pairs)", c.HeadDim)
	}
	if c.RMSNormEps <= 0 {
		bad("rms_norm_eps = %g, want > 0", c.RMSNormEps)
	}
	if c.RopeTheta <= 0 {
		bad("rope_theta = %g, want > 0", c.RopeTheta)
	}
	if c.MLPBias {
		errs = append(errs, fmt.Errorf("%w: mlp_bias", ErrUnsupportedArch))
	}
	if rs := c.RopeScaling; rs != nil {
		switch rs.Kind() {
		case "llama3":
			if rs.Factor <= 0 || rs.LowFreqFactor <= 0 || rs.HighFreqFactor <= rs.LowFreqFactor || rs.OriginalMaxPositionEmbeddings <= 0 {
				bad("rope_scaling llama3 needs factor > 0, 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0")
			}
		case "linear":
			if rs.Factor <= 0 {
				bad("rope_scaling linear needs factor > 0")
			}
		case "default", "":
		default:
			errs = append(errs, fmt.Errorf("%w: rope_scaling type %q (want llama3 or linear)", ErrUnsupportedArch, rs.Kind()))
		}
	}
	if a.validate != nil {
		errs = append(errs, a.validate(c)...)
	}
	return errors.Join(errs...)
}

// validateSiLU is the activation and sliding-window check of the Llama and
// Qwen families (no sliding-window layers there).
func validateSiLU(c Config) []error {
	var errs []error
	if c.HiddenAct != "silu" {
		errs = append(errs, fmt.Errorf("%w: hidden_act %q (want silu)", ErrUnsupportedArch, c.HiddenAct))
	}
	if c.UseSlidingWindow || slices.Contains(c.LayerTypes, "sliding_attention") {
		errs = append(errs, fmt.Errorf("%w: use_sliding_window for model_type %s", ErrUnsupportedArch, c.ModelType))
	}
	return errs
}

// IsSlidingLayer reports whether decoder layer i attends over a sliding
// window of SlidingWindow keys (Gemma 3's local layers) rather than the
// whole context.
func (c Config) IsSlidingLayer(i int) bool {
	return i >= 0 && i < len(c.LayerTypes) && c.LayerTypes[i] == "sliding_attention" && c.SlidingWindow > 0
}

// qkvBias reports whether q/k/v projections have biases.
func (c Config) qkvBias() bool { return c.arch().qkvBias(c) }

// oBias reports whether the output projection has a bias.
func (c Config) oBias() bool { return c.arch().oBias(c) }

// InvFreq returns RoPE's inverse frequencies (HeadDim/2 values) of the
// full-attention layers: base rope_theta, with rope_scaling applied (llama3
// as HF's _compute_llama3_parameters; linear divides by factor).
func (c Config) InvFreq() []float64 { return c.invFreq(c.RopeTheta, true) }

// LayerInvFreq returns the inverse frequencies layer i uses: Gemma 3's
// sliding layers take rope_local_base_freq, never scaled.
func (c Config) LayerInvFreq(i int) []float64 {
	if c.IsSlidingLayer(i) && c.RopeLocalBaseFreq > 0 {
		return c.invFreq(c.RopeLocalBaseFreq, false)
	}
	return c.InvFreq()
}

func (c Config) invFreq(theta float64, scaled bool) []float64 {
	half := c.HeadDim / 2
	out := make([]float64, half)
	for j := range out {
		out[j] = 1 / math.Pow(theta, float64(2*j)/float64(c.HeadDim))
	}
	rs := c.RopeScaling
	if rs == nil || !scaled {
		return out
	}
	switch rs.Kind() {
	case "linear":
		for j := range out {
			out[j] /= rs.Factor
		}
		return out
	case "llama3":
	default:
		return out
	}
	old := float64(rs.OriginalMaxPositionEmbeddings)
	lowWave, highWave := old/rs.LowFreqFactor, old/rs.HighFreqFactor
	for j, f := range out {
		wave := 2 * math.Pi / f
		switch {
		case wave < highWave:
		case wave > lowWave:
			out[j] = f / rs.Factor
		default:
			smooth := (old/wave - rs.LowFreqFactor) / (rs.HighFreqFactor - rs.LowFreqFactor)
			out[j] = (1-smooth)*f/rs.Factor + smooth*f
		}
	}
	return out
}

// MarshalJSON writes the config in HF layout, eos_token_id included. A
// multimodal checkpoint's config is written as its language model alone
// (e.g. gemma3 as gemma3_text, Gemma3ForCausalLM): that is what Save writes.
// torch_dtype is float32, Save's weights; see SaveConfig for others.
func (c Config) MarshalJSON() ([]byte, error) { return c.hfJSON("F32") }

// torchDTypes are config.json's torch_dtype names of safetensors dtypes.
var torchDTypes = map[string]string{"F32": "float32", "BF16": "bfloat16", "F16": "float16"}

// hfJSON is MarshalJSON with torch_dtype naming fileDType, the safetensors
// dtype the weights are written in.
func (c Config) hfJSON(fileDType string) ([]byte, error) {
	torchDType, ok := torchDTypes[fileDType]
	if !ok {
		return nil, fmt.Errorf("model: config for %q weights: want F32, BF16 or F16", fileDType)
	}
	type plain Config
	if a := c.arch(); a != nil && a.multimodal {
		c.ModelType = a.saveAs
	}
	m := map[string]any{}
	b, err := json.Marshal(plain(c))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	switch len(c.EOSTokenIDs) {
	case 0:
	case 1:
		m["eos_token_id"] = c.EOSTokenIDs[0]
	default:
		m["eos_token_id"] = c.EOSTokenIDs
	}
	if c.BOSTokenID < 0 {
		delete(m, "bos_token_id")
	}
	if a := c.arch(); a != nil {
		m["architectures"] = []string{a.class}
	}
	m["torch_dtype"] = torchDType
	return json.MarshalIndent(m, "", "  ")
}

// SmolLM2Shaped returns the configuration of SmolLM2-135M (random weights
// are made by New); benchmarks use it.
func SmolLM2Shaped() Config {
	return Config{
		ModelType: "llama", VocabSize: 49152, HiddenSize: 576, IntermediateSize: 1536,
		NumHiddenLayers: 30, NumAttentionHeads: 9, NumKeyValueHeads: 3, HeadDim: 64,
		MaxPositionEmbeddings: 8192, RMSNormEps: 1e-5, RopeTheta: 100000,
		TieWordEmbeddings: true, HiddenAct: "silu", BOSTokenID: 1, EOSTokenIDs: []int{2},
	}
}
