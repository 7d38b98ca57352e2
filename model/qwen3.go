package model

// qwen3.go: Qwen3 (Qwen3ForCausalLM, dense 0.6B–32B). A Llama block with
// per-head RMSNorms on q and k (q_norm/k_norm over head_dim, before RoPE),
// head_dim taken from config.json (Qwen3-0.6B: hidden 1024, 16 heads,
// head_dim 128), no biases; the head is tied or not.

func init() {
	register(&arch{
		modelType: "qwen3", class: "Qwen3ForCausalLM",
		defaults: func(c *Config) {
			// Qwen3Config's defaults for keys real files may omit.
			c.HiddenAct = "silu"
			c.HeadDim = 128
		},
		validate: validateSiLU,
		layerWeights: func(c Config, i int, add func(module string, shape ...int)) {
			llamaNorms(c, i, add)
			add("self_attn.q_norm.weight", c.HeadDim)
			add("self_attn.k_norm.weight", c.HeadDim)
		},
		qkNorm:  true,
		qkvBias: func(c Config) bool { return c.AttentionBias },
		oBias:   func(c Config) bool { return c.AttentionBias },
	})
}
