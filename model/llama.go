package model

// llama.go: the Llama family (Llama 2/3/3.1/3.2, SmolLM2) and Qwen2/2.5,
// which differs only in its q/k/v biases.

func init() {
	register(&arch{
		modelType: "llama", class: "LlamaForCausalLM",
		defaults:     func(c *Config) { c.HiddenAct = "silu" },
		validate:     validateSiLU,
		layerWeights: llamaNorms,
		qkvBias:      func(c Config) bool { return c.AttentionBias },
		oBias:        func(c Config) bool { return c.AttentionBias },
	})
	register(&arch{
		modelType: "qwen2", class: "Qwen2ForCausalLM",
		defaults:     func(c *Config) { c.HiddenAct = "silu" },
		validate:     validateSiLU,
		layerWeights: llamaNorms,
		qkvBias:      func(Config) bool { return true },
		oBias:        noBias,
	})
}

// llamaNorms adds the two norms of a Llama-style layer: input_layernorm
// before attention and post_attention_layernorm before the MLP.
func llamaNorms(c Config, _ int, add func(module string, shape ...int)) {
	add("input_layernorm.weight", c.HiddenSize)
	add("post_attention_layernorm.weight", c.HiddenSize)
}
