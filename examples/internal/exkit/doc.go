// Package exkit holds what the three example programs (examples/poker,
// examples/gsm8k, examples/wordle) share: the common flags and JSON config
// file, loading a Hugging Face model folder or building the tiny embedded
// model with its own tokenizer, a supervised warm start, greedy evaluation,
// and PNG plots of metrics.jsonl.
//
// It uses only grpokit's public API (model, lora, tokenizer, grpo); it is
// internal to examples/ because it is example scaffolding, not library API.
package exkit
