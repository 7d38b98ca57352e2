package gguf

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/grpokit/grpokit/model"
)

// modelTypes maps general.architecture to the Hugging Face model_type it
// is read as: the families Write writes.
var modelTypes = map[string]string{
	"llama":  "llama",
	"qwen2":  "qwen2",
	"qwen3":  "qwen3",
	"gemma3": "gemma3_text",
}

// ModelConfig returns the Hugging Face configuration (config.json's
// fields) the file's metadata describes: the architecture, its
// hyperparameters, whether the output matrix is tied to the embeddings
// (no output.weight), the RoPE settings (base, Llama 3's scaling from
// rope_freqs.weight, Gemma's linear scaling and local base), Gemma's
// sliding-window layers, and the special token ids. An architecture
// grpokit has no model for wraps model.ErrUnsupportedArch; a missing or
// mistyped key is a *FormatError naming it.
func (g *File) ModelConfig() (model.Config, error) {
	arch, ok, err := g.String("general.architecture")
	if err != nil {
		return model.Config{}, err
	}
	if !ok {
		return model.Config{}, g.keyError("general.architecture", "missing")
	}
	mt, ok := modelTypes[arch]
	if !ok {
		return model.Config{}, &FormatError{g.Path, "metadata key general.architecture",
			fmt.Errorf("%w: %q (grpokit reads llama, qwen2, qwen3 and gemma3)", model.ErrUnsupportedArch, arch)}
	}
	a := arch + "."
	var errs []error
	need := func(key string) int {
		n, ok, err := g.Int(a + key)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !ok:
			errs = append(errs, g.keyError(a+key, "missing"))
		case n <= 0 || n > 1<<24:
			errs = append(errs, g.keyError(a+key, "%d is out of range", n))
		}
		return int(n)
	}
	optInt := func(key string, def int) int {
		n, ok, err := g.Int(a + key)
		if err != nil {
			errs = append(errs, err)
		}
		if !ok || err != nil {
			return def
		}
		if n <= 0 || n > 1<<24 {
			errs = append(errs, g.keyError(a+key, "%d is out of range", n))
			return def
		}
		return int(n)
	}
	optFloat := func(key string, def float64) float64 {
		x, ok, err := g.Float(a + key)
		if err != nil {
			errs = append(errs, err)
		}
		if !ok || err != nil {
			return def
		}
		if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
			errs = append(errs, g.keyError(a+key, "%v is not a positive number", x))
			return def
		}
		return x
	}
	hidden := need("embedding_length")
	heads := need("attention.head_count")
	c := map[string]any{
		"model_type":          mt,
		"hidden_size":         hidden,
		"num_hidden_layers":   need("block_count"),
		"intermediate_size":   need("feed_forward_length"),
		"num_attention_heads": heads,
	}
	if len(errs) > 0 {
		return model.Config{}, errors.Join(errs...)
	}
	headDim := optInt("attention.key_length", hidden/heads)
	c["num_key_value_heads"] = optInt("attention.head_count_kv", heads)
	c["head_dim"] = headDim
	if v := optInt("attention.value_length", headDim); v != headDim {
		errs = append(errs, &FormatError{g.Path, "metadata key " + a + "attention.value_length",
			fmt.Errorf("%w: value heads of %d values and key heads of %d", ErrUnsupported, v, headDim)})
	}
	if r := optInt("rope.dimension_count", headDim); r != headDim {
		errs = append(errs, &FormatError{g.Path, "metadata key " + a + "rope.dimension_count",
			fmt.Errorf("%w: RoPE on %d of a head's %d dimensions (partial rotary)", ErrUnsupported, r, headDim)})
	}
	epsDefault := 1e-6
	if arch == "llama" {
		epsDefault = 1e-5
	}
	c["rms_norm_eps"] = optFloat("attention.layer_norm_rms_epsilon", epsDefault)
	c["rope_theta"] = optFloat("rope.freq_base", 10000)
	c["max_position_embeddings"] = optInt("context_length", 2048)

	emb, ok := g.Tensor("token_embd.weight")
	if !ok || len(emb.Shape) != 2 {
		errs = append(errs, &FormatError{g.Path, "tensor token_embd.weight", fmt.Errorf("%w: missing, or not a matrix", ErrFormat)})
	} else {
		c["vocab_size"] = optInt("vocab_size", emb.Shape[0])
	}
	_, hasOutput := g.Tensor("output.weight")
	c["tie_word_embeddings"] = !hasOutput
	if _, bias := g.Tensor("blk.0.attn_q.bias"); bias && arch == "llama" {
		c["attention_bias"] = true
	}
	if _, bias := g.Tensor("blk.0.ffn_up.bias"); bias {
		errs = append(errs, &FormatError{g.Path, "tensor blk.0.ffn_up.bias", fmt.Errorf("%w: MLP biases", ErrUnsupported)})
	}
	if id, ok, err := g.Int("tokenizer.ggml.bos_token_id"); err != nil {
		errs = append(errs, err)
	} else if ok {
		c["bos_token_id"] = id
	}
	if id, ok, err := g.Int("tokenizer.ggml.eos_token_id"); err != nil {
		errs = append(errs, err)
	} else if ok {
		c["eos_token_id"] = id
	}

	switch arch {
	case "llama":
		if rs, err := g.llamaRopeScaling(headDim, c["rope_theta"].(float64)); err != nil {
			errs = append(errs, err)
		} else if rs != nil {
			c["rope_scaling"] = rs
		}
		c["hidden_act"] = "silu"
	case "qwen2", "qwen3":
		c["hidden_act"] = "silu"
	case "gemma3":
		c["hidden_activation"] = "gelu_pytorch_tanh"
		// The query norm holds any other scale (see gemmaQueryScale).
		c["query_pre_attn_scalar"] = headDim
		if c["num_hidden_layers"] == 62 {
			c["query_pre_attn_scalar"] = hidden / heads
		}
		c["rope_local_base_freq"] = optFloat("rope.freq_base_swa", 10000)
		if w := optInt("attention.sliding_window", 0); w > 0 {
			c["sliding_window"] = w
			layers := c["num_hidden_layers"].(int)
			types := make([]string, layers)
			pattern, hasPattern := g.Lookup(a + "attention.sliding_window_pattern")
			bools, isBools := pattern.([]bool)
			switch {
			case hasPattern && (!isBools || len(bools) != layers):
				errs = append(errs, g.keyError(a+"attention.sliding_window_pattern", "want %d bools, one a layer", layers))
			case hasPattern:
				for i, sliding := range bools {
					types[i] = layerType(sliding)
				}
			default: // llama.cpp's rule: every sixth layer is full
				for i := range types {
					types[i] = layerType((i+1)%6 != 0)
				}
			}
			c["layer_types"] = types
		}
		if kind, ok, err := g.String(a + "rope.scaling.type"); err != nil {
			errs = append(errs, err)
		} else if ok && kind == "linear" {
			c["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": optFloat("rope.scaling.factor", 1)}
		} else if ok && kind != "none" {
			errs = append(errs, &FormatError{g.Path, "metadata key " + a + "rope.scaling.type", fmt.Errorf("%w: %q on gemma3", ErrUnsupported, kind)})
		}
	}
	if len(errs) > 0 {
		return model.Config{}, errors.Join(errs...)
	}
	data, err := json.Marshal(c)
	if err != nil {
		return model.Config{}, fmt.Errorf("gguf: %s: %w", g.Path, err)
	}
	cfg, err := model.ParseConfig(data)
	if err != nil {
		return model.Config{}, fmt.Errorf("gguf: %s: the metadata describes no valid model: %w", g.Path, err)
	}
	return cfg, nil
}

func layerType(sliding bool) string {
	if sliding {
		return "sliding_attention"
	}
	return "full_attention"
}

// llamaRopeScaling reads Llama 3's RoPE scaling back from the per-frequency
// divisors of rope_freqs.weight (llama.cpp keeps no other trace of it):
// the settings of every released Llama 3.x model are tried, and the file
// must match one of them to 1e-6 relative.
func (g *File) llamaRopeScaling(headDim int, theta float64) (map[string]any, error) {
	if _, ok := g.Tensor("rope_freqs.weight"); !ok {
		if kind, ok, err := g.String("llama.rope.scaling.type"); err != nil {
			return nil, err
		} else if ok && kind == "linear" {
			f, _, err := g.Float("llama.rope.scaling.factor")
			if err != nil {
				return nil, err
			}
			return map[string]any{"rope_type": "linear", "factor": f}, nil
		} else if ok && kind != "none" {
			return nil, &FormatError{g.Path, "metadata key llama.rope.scaling.type", fmt.Errorf("%w: %q", ErrUnsupported, kind)}
		}
		return nil, nil
	}
	freqs, shape, err := g.Float32("rope_freqs.weight")
	if err != nil {
		return nil, err
	}
	field := "tensor rope_freqs.weight"
	if len(shape) != 1 || shape[0] != headDim/2 {
		return nil, &FormatError{g.Path, field, fmt.Errorf("%w: shape %v, want [%d]", ErrFormat, shape, headDim/2)}
	}
	factor := 0.0
	for _, f := range freqs {
		factor = math.Max(factor, float64(f))
	}
	factor = math.Round(factor)
	base := make([]float64, len(freqs))
	for j := range base {
		base[j] = 1 / math.Pow(theta, float64(2*j)/float64(headDim))
	}
	matches := func(orig int, low, high float64) bool {
		rs := &model.RopeScaling{RopeType: "llama3", Factor: factor, LowFreqFactor: low, HighFreqFactor: high, OriginalMaxPositionEmbeddings: orig}
		scaled := model.Config{ModelType: "llama", HeadDim: headDim, RopeTheta: theta, RopeScaling: rs}.InvFreq()
		for j, f := range freqs {
			if math.Abs(base[j]/scaled[j]-float64(f)) > 1e-6*float64(f) {
				return false
			}
		}
		return true
	}
	// Between the two bands, 1/divisor = (1-s)/factor + s with s linear in
	// the frequency: s = orig/(2π(high-low))·f - low/(high-low). Two such
	// frequencies fix the line; low = 1 (every release's) then gives high
	// and orig. Otherwise the released settings are tried.
	type cand struct {
		orig      int
		low, high float64
	}
	var cands []cand
	var fs, ss []float64
	for j, f := range freqs {
		if d := float64(f); d > 1+1e-6 && d < factor-1e-6*factor {
			fs = append(fs, base[j])
			ss = append(ss, (1/d-1/factor)/(1-1/factor))
		}
	}
	if n := len(fs); n >= 2 && factor > 1 {
		slope := (ss[0] - ss[n-1]) / (fs[0] - fs[n-1])
		icept := ss[0] - slope*fs[0]
		if icept < 0 {
			high := 1 - 1/icept
			orig := slope * 2 * math.Pi * (high - 1)
			cands = append(cands, cand{int(math.Round(orig)), 1, math.Round(high*1e6) / 1e6})
		}
	}
	for _, orig := range []int{8192, 4096, 131072} {
		cands = append(cands, cand{orig, 1, 4}, cand{orig, 1, 2})
	}
	for _, c := range cands {
		if matches(c.orig, c.low, c.high) {
			return map[string]any{"rope_type": "llama3", "factor": factor, "low_freq_factor": c.low,
				"high_freq_factor": c.high, "original_max_position_embeddings": c.orig}, nil
		}
	}
	return nil, &FormatError{g.Path, field, fmt.Errorf("%w: per-frequency RoPE divisors (largest %g) that match no Llama 3 scaling (factor, low/high frequency factors 1/4 or 1/2, original context 4096, 8192 or 131072)",
		ErrUnsupported, factor)}
}

// tensorNames maps the Hugging Face name of every weight cfg needs to its
// name in a file of general.architecture arch.
func tensorNames(cfg model.Config) (map[string]string, family, error) {
	fam, ok := families[cfg.ModelType]
	if !ok {
		return nil, fam, fmt.Errorf("%w: model_type %q", ErrUnsupported, cfg.ModelType)
	}
	out := map[string]string{}
	for _, w := range cfg.Weights() {
		n, err := fam.tensorName(w.Name)
		if err != nil {
			return nil, fam, err
		}
		out[w.Name] = n
	}
	return out, fam, nil
}

// untransform undoes Write's transform for llama.cpp's layout, in place:
// Llama's query and key rows back to Hugging Face's rotate-half order,
// Gemma's 1 + w norms back to w.
func (f family) untransform(c model.Config, hf string, x []float32) {
	if f.permuteQK {
		switch {
		case strings.HasSuffix(hf, "self_attn.q_proj.weight"), strings.HasSuffix(hf, "self_attn.q_proj.bias"):
			unpermuteRows(x, c.NumAttentionHeads, c.HeadDim)
		case strings.HasSuffix(hf, "self_attn.k_proj.weight"), strings.HasSuffix(hf, "self_attn.k_proj.bias"):
			unpermuteRows(x, c.NumKeyValueHeads, c.HeadDim)
		}
	}
	if f.onePlusNorm && strings.HasSuffix(hf, "norm.weight") {
		// Exact: for 1+w in [0.5, 2] the subtraction has no rounding, so
		// the model's 1 + w gives back the stored value bit for bit.
		for i := range x {
			x[i] -= 1
		}
	}
}

// unpermuteRows is permuteRows' inverse: interleaved RoPE pairs (2j, 2j+1)
// back to HF's rows j and j + headDim/2.
func unpermuteRows(x []float32, heads, headDim int) {
	rows := heads * headDim
	cols := len(x) / rows
	half := headDim / 2
	src := make([]float32, headDim*cols)
	for h := range heads {
		blk := x[h*headDim*cols : (h+1)*headDim*cols]
		copy(src, blk)
		for j := range half {
			for t := range 2 {
				copy(blk[(t*half+j)*cols:(t*half+j+1)*cols], src[(2*j+t)*cols:(2*j+t+1)*cols])
			}
		}
	}
}
