package model

import (
	"fmt"
	"strings"
)

// tiedFallback maps a weight name to the name it falls back to when absent
// (tied embeddings: the LM head reuses the token embedding).
var tiedFallback = map[string]string{"lm_head.weight": "model.embed_tokens.weight"}

// ScopeOf maps a Hugging Face tensor name to the GoMLX context scope and
// variable name that hold it: "model.layers.3.self_attn.q_proj.weight" →
// ("/model/layers/3/self_attn/q_proj", "weight"). NameOf is its inverse.
// Loader, saver and LoRA/PEFT all go through this pair.
func ScopeOf(hfName string) (scope, varName string, err error) {
	parts := strings.Split(hfName, ".")
	if len(parts) < 2 {
		return "", "", fmt.Errorf("model: tensor name %q has no module path", hfName)
	}
	for _, p := range parts {
		if p == "" || strings.Contains(p, "/") {
			return "", "", fmt.Errorf("model: bad tensor name %q", hfName)
		}
	}
	return "/" + strings.Join(parts[:len(parts)-1], "/"), parts[len(parts)-1], nil
}

// NameOf maps a context scope and variable name back to the HF tensor name.
func NameOf(scope, varName string) (string, error) {
	if !strings.HasPrefix(scope, "/") || len(scope) < 2 || varName == "" || strings.Contains(varName, ".") {
		return "", fmt.Errorf("model: scope %q / variable %q is not a weight path", scope, varName)
	}
	parts := strings.Split(scope[1:], "/")
	for _, p := range parts {
		if p == "" || strings.Contains(p, ".") {
			return "", fmt.Errorf("model: scope %q is not a weight path", scope)
		}
	}
	return strings.Join(parts, ".") + "." + varName, nil
}

// layerName returns the HF name of a module in decoder layer i, e.g.
// layerName(3, "self_attn.q_proj") = "model.layers.3.self_attn.q_proj".
func layerName(i int, module string) string {
	return fmt.Sprintf("model.layers.%d.%s", i, module)
}

// Projection is one linear module of a decoder layer: its short name (as
// PEFT's target_modules) and its HF module path inside the layer.
type Projection struct{ Short, Module string }

// Projections returns the linear modules of one decoder layer, in order
// (a new slice each call).
func Projections() []Projection {
	return []Projection{
		{"q_proj", "self_attn.q_proj"}, {"k_proj", "self_attn.k_proj"},
		{"v_proj", "self_attn.v_proj"}, {"o_proj", "self_attn.o_proj"},
		{"gate_proj", "mlp.gate_proj"}, {"up_proj", "mlp.up_proj"}, {"down_proj", "mlp.down_proj"},
	}
}

// WeightSpec names one tensor the model needs and its [out, in] shape.
type WeightSpec struct {
	Name  string
	Shape []int
}

// Weights lists every tensor a model with config c needs, in HF names and
// file layout. With tied embeddings lm_head.weight is not listed. An
// unknown model_type lists nothing (Validate reports it).
func (c Config) Weights() []WeightSpec {
	h, hd := c.HiddenSize, c.HeadDim
	q, kv := c.NumAttentionHeads*hd, c.NumKeyValueHeads*hd
	a := c.arch()
	if a == nil {
		return nil
	}
	ws := []WeightSpec{{"model.embed_tokens.weight", []int{c.VocabSize, h}}}
	for i := range c.NumHiddenLayers {
		add := func(module string, shape ...int) {
			ws = append(ws, WeightSpec{layerName(i, module), shape})
		}
		a.layerWeights(c, i, add)
		add("self_attn.q_proj.weight", q, h)
		add("self_attn.k_proj.weight", kv, h)
		add("self_attn.v_proj.weight", kv, h)
		if c.qkvBias() {
			add("self_attn.q_proj.bias", q)
			add("self_attn.k_proj.bias", kv)
			add("self_attn.v_proj.bias", kv)
		}
		add("self_attn.o_proj.weight", h, q)
		if c.oBias() {
			add("self_attn.o_proj.bias", h)
		}
		add("mlp.gate_proj.weight", c.IntermediateSize, h)
		add("mlp.up_proj.weight", c.IntermediateSize, h)
		add("mlp.down_proj.weight", h, c.IntermediateSize)
	}
	ws = append(ws, WeightSpec{"model.norm.weight", []int{h}})
	if !c.TieWordEmbeddings {
		ws = append(ws, WeightSpec{"lm_head.weight", []int{c.VocabSize, h}})
	}
	return ws
}

// NumParams returns the number of scalar weights a model with config c
// has (tied embeddings counted once; a multimodal checkpoint's language
// model only).
func (c Config) NumParams() int64 {
	var n int64
	for _, w := range c.Weights() {
		k := int64(1)
		for _, d := range w.Shape {
			k *= int64(d)
		}
		n += k
	}
	return n
}

// Prefixes of a multimodal Gemma 3 checkpoint: hub files (transformers
// 4.50–4.57 save them so) and the module tree of transformers >= 4.52,
// which PEFT adapters trained with it use.
const (
	mmFileLM   = "language_model.model."
	mmFileHead = "language_model.lm_head."
	mmModuleLM = "model.language_model."
)

// visionPrefixes are a multimodal checkpoint's non-text parts.
var visionPrefixes = []string{"vision_tower.", "multi_modal_projector.", "model.vision_tower.", "model.multi_modal_projector."}

// CanonicalName maps a tensor or module name as a checkpoint or a PEFT
// adapter of this model writes it to the name the model uses (its
// text-only HF name, as in Weights). For a multimodal checkpoint
// "language_model.model.X" and "model.language_model.X" become "model.X",
// "language_model.lm_head.X" becomes "lm_head.X", and vision is true for
// the vision tower's and projector's tensors, which a text model skips.
// Other names are returned unchanged.
func (c Config) CanonicalName(name string) (canonical string, vision bool) {
	if a := c.arch(); a == nil || !a.multimodal {
		return name, false
	}
	for _, p := range visionPrefixes {
		if strings.HasPrefix(name, p) {
			return name, true
		}
	}
	if rest, ok := strings.CutPrefix(name, mmFileLM); ok {
		return "model." + rest, false
	}
	if rest, ok := strings.CutPrefix(name, mmModuleLM); ok {
		return "model." + rest, false
	}
	if rest, ok := strings.CutPrefix(name, mmFileHead); ok {
		return "lm_head." + rest, false
	}
	return name, false
}

// ModuleName is CanonicalName's inverse for the module tree of current
// transformers (>= 4.52), whose names PEFT puts in adapter keys:
// "model.layers.0.self_attn.q_proj" is "model.language_model.layers.0.self_attn.q_proj"
// in a multimodal Gemma 3 and unchanged elsewhere.
func (c Config) ModuleName(name string) string {
	if a := c.arch(); a == nil || !a.multimodal {
		return name
	}
	if rest, ok := strings.CutPrefix(name, "model."); ok {
		return mmModuleLM + rest
	}
	return name
}
