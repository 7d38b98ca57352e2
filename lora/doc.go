// Package lora implements LoRA adapters for package model, with PEFT's
// semantics and file layout.
//
// An adapted projection computes y = W·x (+b) + scaling·B(A·dropout(x)),
// with scaling = alpha/r (alpha/sqrt(r) with RSLoRA). A starts
// Kaiming-uniform as in PEFT and B at zero, so a fresh adapter leaves the
// model's output unchanged. Base weights are frozen (not trainable) and not
// copied; A and B live in the model's context under the adapted module's
// scope (model.layers.0.self_attn.q_proj.lora_A.weight →
// /model/layers/0/self_attn/q_proj/lora_A, variable weight).
//
//	m, _ := model.Load(dir, nil)
//	a, _ := lora.Attach(m, lora.Config{R: 8, Alpha: 16, TargetModules: []string{"q_proj", "v_proj"}})
//	vars := a.Variables()     // = m.TrainableVariables(): what the optimizer updates
//	_ = a.Save("adapter")     // adapter_config.json + adapter_model.safetensors (PEFT)
//	_ = a.SaveMerged("merged") // HF model with W += scaling·B·A
//
// Target modules are the projections' short names, the same in every
// architecture package model supports (Llama, Qwen2, Qwen3, Gemma 3). Adapter
// keys are base_model.model.<module>.lora_{A,B}.weight with <module> in
// transformers' module tree for the architecture (model.Config.ModuleName):
// for a multimodal Gemma 3 checkpoint that is
// base_model.model.model.language_model.layers.…, as PEFT writes it with
// transformers >= 4.52; Load also reads the older
// base_model.model.language_model.model.… layout and skips the vision
// tower's adapters (PEFT adapts SigLIP's q_proj/v_proj too) with one logged
// line.
//
// Attach and Load attach the adapter to the model (model.SetAdapter), so the
// model's LogitsGraph and Generate use it, and BaseLogitsGraph ignores it.
// Dropout is active only in graphs marked as training
// (ctx.SetTraining(g, true)).
//
// Delta builds graphs and panics on error; every other function returns
// errors. An Adapter is not safe for concurrent use. Golden tests load the
// PEFT adapters in ../shared/golden and compare with transformers + PEFT.
package lora
