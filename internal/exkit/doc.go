// Package exkit holds what the example programs (examples/poker,
// examples/gsm8k, examples/wordle, examples/agent) and the Wordle study
// harness (research/wordle) share: the common flags and JSON config file,
// loading a Hugging Face model folder or building the tiny embedded model
// with its own tokenizer, a supervised warm start, greedy evaluation, the
// eval.jsonl log, and PNG plots of metrics.jsonl.
//
// It uses only grpokit's public API; it is internal because it is
// scaffolding for programs, not library API.
package exkit
