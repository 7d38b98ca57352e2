package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
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

// Config is the subset of a Hugging Face config.json that defines a
// Llama-family decoder. Field names and json tags copy HF's.
type Config struct {
	// ModelType is "llama" or "qwen2".
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
	RopeTheta             float64 `json:"rope_theta"`
	// RopeScaling is nil when config.json has none (or null).
	RopeScaling       *RopeScaling `json:"rope_scaling"`
	TieWordEmbeddings bool         `json:"tie_word_embeddings"`
	// AttentionBias puts biases on q/k/v/o (Llama). Qwen2 always has q/k/v biases.
	AttentionBias bool   `json:"attention_bias,omitempty"`
	MLPBias       bool   `json:"mlp_bias,omitempty"`
	HiddenAct     string `json:"hidden_act"`
	// BOSTokenID is the begin-of-sequence id, -1 if unknown.
	BOSTokenID int `json:"bos_token_id"`
	// EOSTokenIDs holds eos_token_id, which HF writes as a number or a list.
	EOSTokenIDs      []int  `json:"-"`
	UseSlidingWindow bool   `json:"use_sliding_window,omitempty"`
	TorchDType       string `json:"torch_dtype,omitempty"`
}

// ParseConfig decodes a config.json and validates it. Unknown model types
// give an error wrapping ErrUnsupportedArch.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	c.BOSTokenID = -1
	c.RopeTheta = 10000
	c.RMSNormEps = 1e-6
	c.HiddenAct = "silu"
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("model: parse config.json: %w", err)
	}
	var raw struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return c, fmt.Errorf("model: parse config.json: %w", err)
	}
	if len(raw.EOS) > 0 && string(raw.EOS) != "null" {
		var one int
		if err := json.Unmarshal(raw.EOS, &one); err == nil {
			c.EOSTokenIDs = []int{one}
		} else if err := json.Unmarshal(raw.EOS, &c.EOSTokenIDs); err != nil {
			return c, fmt.Errorf("model: config.json: eos_token_id %s is neither a number nor a list", raw.EOS)
		}
	}
	c = c.withDefaults()
	return c, c.Validate()
}

// withDefaults fills the fields HF derives when absent: num_key_value_heads
// (= num_attention_heads) and head_dim (= hidden_size / num_attention_heads).
func (c Config) withDefaults() Config {
	if c.NumKeyValueHeads == 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	if c.HeadDim == 0 && c.NumAttentionHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	return c
}

// ReadConfig reads and validates path (a config.json).
func ReadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
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
	switch c.ModelType {
	case "llama", "qwen2":
	default:
		return fmt.Errorf("%w: model_type %q (want llama or qwen2)", ErrUnsupportedArch, c.ModelType)
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
	if c.HiddenAct != "silu" {
		errs = append(errs, fmt.Errorf("%w: hidden_act %q (want silu)", ErrUnsupportedArch, c.HiddenAct))
	}
	if c.UseSlidingWindow {
		errs = append(errs, fmt.Errorf("%w: use_sliding_window", ErrUnsupportedArch))
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
		case "default", "":
		default:
			errs = append(errs, fmt.Errorf("%w: rope_scaling type %q (want llama3)", ErrUnsupportedArch, rs.Kind()))
		}
	}
	return errors.Join(errs...)
}

// qkvBias reports whether q/k/v projections have biases.
func (c Config) qkvBias() bool { return c.ModelType == "qwen2" || c.AttentionBias }

// oBias reports whether the output projection has a bias.
func (c Config) oBias() bool { return c.ModelType != "qwen2" && c.AttentionBias }

// InvFreq returns RoPE's inverse frequencies (HeadDim/2 values), with
// Llama 3 scaling applied when configured (as HF's _compute_llama3_parameters).
func (c Config) InvFreq() []float64 {
	half := c.HeadDim / 2
	out := make([]float64, half)
	for j := range out {
		out[j] = 1 / math.Pow(c.RopeTheta, float64(2*j)/float64(c.HeadDim))
	}
	rs := c.RopeScaling
	if rs == nil || rs.Kind() != "llama3" {
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

// MarshalJSON writes the config in HF layout, eos_token_id included.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
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
	switch c.ModelType {
	case "llama":
		m["architectures"] = []string{"LlamaForCausalLM"}
	case "qwen2":
		m["architectures"] = []string{"Qwen2ForCausalLM"}
	}
	m["torch_dtype"] = "float32"
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
