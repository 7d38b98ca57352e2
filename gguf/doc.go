// Package gguf writes language models as GGUF v3 files, the format
// llama.cpp and Ollama run, without Python.
//
// Write takes a model.Config, a function that yields each weight in
// float32 (a loaded model's weights, or a base model's merged with a LoRA
// adapter, one tensor at a time) and a Vocab, and writes the file that
// llama.cpp's own converter (convert_hf_to_gguf.py) would: the
// architecture names, hyperparameter keys and tensor names of llama.cpp's
// graphs for Llama, Qwen2, Qwen3 and Gemma 3, with the layout changes
// those graphs need:
//
//   - Llama's q_proj and k_proj rows are reordered from Hugging Face's
//     rotate-half RoPE layout to the interleaved pairs llama.cpp's llama
//     graph rotates (Qwen and Gemma use the rotate-half, "NEOX", layout in
//     llama.cpp too and are stored as they are);
//   - Gemma's RMSNorm weights are stored as 1 + w, since Gemma multiplies
//     by (1 + w) and llama.cpp by the stored weight;
//   - Gemma 3's query_pre_attn_scalar is folded into q_norm where it
//     differs from what llama.cpp assumes (1/sqrt(head_dim));
//   - tied embeddings are written once, as token_embd.weight, which
//     llama.cpp then also uses as the output matrix.
//
// Weights are stored as F32, F16, BF16, Q8_0 or Q4_0 (ggml's block
// quantizations, computed here as ggml's reference quantizers do).
// NewVocab converts a Hugging Face tokenizer (byte-level BPE as Llama 3
// and Qwen, or SentencePiece-style BPE with byte fallback as Gemma) to the
// tokenizer.ggml.* keys, with the chat template; WriteModelfile writes an
// Ollama Modelfile for the file.
package gguf
