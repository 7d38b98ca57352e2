// Package model implements decoder-only language models on GoMLX — Llama
// 2/3/3.1/3.2 and SmolLM2 (model_type llama), Qwen2/2.5 (qwen2), Qwen3
// (qwen3), Gemma 3 (gemma3_text, and the language model of the multimodal
// gemma3 checkpoints) — with Hugging Face config.json and safetensors
// loading and saving, the forward pass as a graph builder, per-token
// log-probs, and KV-cache generation with sampling and constrained decoding.
//
// It owns the model and nothing about training: package lora adds adapters
// through the small Adapter hook (model never imports lora), and package grpo
// builds its loss on LogitsGraph and TokenLogProbs.
//
// # Usage
//
//	m, err := model.Load("SmolLM2-135M", nil) // config.json + model.safetensors (or sharded)
//	out, err := m.Generate(ctx, prompts, model.GenerateConfig{
//		MaxNewTokens: 64, NumGenerations: 8, Sampling: model.Sampling{Temperature: 1, TopP: 0.95}, Seed: 1,
//	})
//	// In a training graph (an mlctx.Exec on m.Context()):
//	logits := m.LogitsGraph(ctx, ids, mask, positions) // [B,T,V], with the adapter if any
//	ref := m.BaseLogitsGraph(ctx, ids, mask, positions) // without adapter: GRPO's reference model
//	lp, ent := model.TokenLogProbs(logits, targets, 1)  // [B,T] each
//	grads := Gradient(loss, ...)                         // over m.TrainableVariables()
//
// # Weights
//
// Each HF tensor is a variable of the GoMLX context m.Context(): the name
// "model.layers.3.self_attn.q_proj.weight" is scope
// "/model/layers/3/self_attn/q_proj", variable "weight" (ScopeOf and NameOf
// map both ways; the loader, the saver and lora/PEFT all use them). Tensors
// keep the file's [out, in] layout. A tied lm_head falls back to
// model.embed_tokens.weight. F32, BF16 and F16 files are
// converted to float32 on the Go side. Graphs compute in float32, or in
// bfloat16 with Options.Compute (SetCompute; ParseCompute reads "bf16"), as
// transformers under torch_dtype=bfloat16: weights and activations bf16;
// norm statistics, softmax, the logits and an adapter's term float32;
// trainable variables stay float32 masters (precision.go).
// New builds a model with random weights for a Config (SmolLM2Shaped gives
// SmolLM2-135M's shape); Save and SaveHF write config.json +
// model.safetensors in HF layout.
//
// # Architectures
//
// A family is one file plus a registration: llama.go (llama, qwen2),
// qwen3.go, gemma3.go. Each builds an unexported arch value — config
// defaults (HF's class defaults, for files that list only non-default keys),
// derived fields and validation, the per-layer norm and bias tensors, and
// the block's variations (norm formula w or 1+w, q/k norms, Gemma's
// pre/post feed-forward norms, SiLU or tanh-GELU gate, embedding scale,
// attention scale, multimodal name layout) — and calls register from init.
// The decoder (decoder.go), Load, Generate and package lora stay generic.
// Per-layer RoPE bases and sliding windows come from Config.LayerTypes
// (IsSlidingLayer, LayerInvFreq).
//
// To add a family: copy the closest file, set modelType/class, fill in
// defaults and validate, list the layer's extra tensors in layerWeights,
// and if its block needs a variation the arch fields do not express, add
// one field (with its default being the Llama behaviour) and use it in
// decoder.go. Add a golden case with reference numbers to golden_test.go
// and lora's test, and remove the model type from the relatives list in
// arch.go if it is there. Unknown model types are rejected with the
// supported list; known relatives (qwen3_moe, gemma2, gemma3n, mistral, …)
// are named as such, wrapping ErrUnsupportedArch.
//
// Multimodal Gemma 3 checkpoints (Gemma3ForConditionalGeneration) load as
// their language model: config from text_config over Gemma's defaults,
// tensors language_model.model.X (or model.language_model.X) as model.X
// (Config.CanonicalName), the vision tower and projector skipped with one
// logged line. Save writes such a model as gemma3_text.
//
// # Sliding-window layers
//
// A Gemma 3 sliding layer's query sees sliding_window keys, itself
// included, counted in the padded sequence (cache positions), as HF's
// masking_utils. In generation its KV cache is a ring buffer of
// min(sliding_window, cache length) slots — position p in slot p % window —
// so at a long context 5 of 6 Gemma 3 layers keep only the window; the full
// layers keep the whole context.
//
// # Graphs on the pure-Go backend
//
// Load and New call internal/vjp.Register, which changes GoMLX's
// process-wide gradient table once: DotGeneral gets a gradient made of two
// DotGenerals (the stock one materialises huge tensors) and stride-1 Slice
// gets one made of Concatenate (the stock one needs Pad, missing on
// SimpleGo). The graph avoids Rsqrt (no gradient: Div by Sqrt instead) and
// builds RoPE's rotate-half as a fixed ±1 matmul. Graphs are made of large
// DotGenerals. Where the backend has the ops (XLA: Pad and
// DynamicUpdateSlice in its Capabilities), forms.go picks the native forms
// instead: rotate-half from Slice/Neg/Concatenate and KV-cache writes with
// DynamicUpdateSlice; the pure-Go path is unchanged.
//
// # Generation
//
// Generate left-pads the prompts to a length bucket (16, 32, then four
// sizes an octave: 40, 48, 56, 64, 80, …; a power of two where the cache
// would pass 640 slots, which keeps the bits of long generations as they
// were), prefills once, shares each prompt's KV cache among its
// NumGenerations completions, and runs one compiled decode step per token
// over a fixed-size cache written with Where(Iota == pos, new, cache)
// (DynamicUpdateSlice on backends that have it). On the go backend in
// float32, completions that have stopped leave the decode batch: once a
// batch of at most three quarters the size can hold the rows still
// running, their caches are gathered into it, so a step costs about what
// the live rows cost.
// The tokens are the same bit for bit (the smaller batch is one whose
// matrix products sum every row in the same order); KeepFinishedRows turns
// it off.
// Sampling (temperature, top-k, top-p, seeded) and constraints
// (ConstraintFunc, NewTrie) run on the host from the last logits on the
// pure-Go backend, where that is fastest. On XLA backends sampling (stop
// ids banned below MinNewTokens, repetition penalty, temperature, top-k,
// top-p, min-p) runs in the graph (GenerateConfig.Sampler), and a decode
// step returns only the chosen ids and their log-probabilities instead of
// [rows, vocabulary] logits: top-k and top-p thresholds are found by a
// search over thresholds (GoMLX has no sort), the draw is a Gumbel-max
// among the kept tokens with noise from a counter-based hash of (seed,
// step, row, token). Both samplers draw from the same distribution (tested
// by chi-square) and pick the same greedy tokens; constraints always run
// on the host. The attached adapter is used, so GRPO samples from the
// policy being trained.
//
// # Errors and concurrency
//
// Graph builders (LogitsGraph, BaseLogitsGraph, TokenLogProbs,
// Adapter.Delta) panic on error, as GoMLX's do. Everything else returns
// errors and never panics: Load, New, Save, Logits, TokenLogProbs (method),
// Generate. Load reports all missing or mis-shaped weights at once, as
// *WeightError values (Unwrap gives ErrMissingWeight or ErrShapeMismatch)
// joined with errors.Join; unknown architectures wrap ErrUnsupportedArch.
// A Model is not safe for concurrent use.
//
// # Reference
//
// The math follows transformers v4.43.4's LlamaForCausalLM and
// Qwen2ForCausalLM and transformers' modeling_qwen3.py and
// modeling_gemma3.py (eager attention); tests compare logits, BF16-weight
// logits, log-probs, LoRA logits and greedy generations with the golden
// files in ../shared/golden (qwen3-tiny, gemma3-tiny and gemma3-mm-tiny
// besides llama-tiny and qwen2-tiny).
package model
