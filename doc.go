// Package grpokit is an embeddable Go library for GRPO (Group Relative
// Policy Optimization) reinforcement fine-tuning of small language models,
// built on GoMLX.
//
// The library is a set of packages, one concept each; data flows one way:
//
//	Dataset → prompt → Policy.Generate (G completions) → reward.Funcs →
//	group advantages → loss (with reference log-probs) → optimizer → Policy
//
// The packages:
//
//   - [github.com/grpokit/grpokit/model]: decoders (Llama 3, SmolLM2,
//     Qwen2.5, Qwen3, Gemma 3 text and multimodal checkpoints' language
//     model) read from Hugging Face folders, forward pass,
//     KV-cache generation, sampling and constrained decoding.
//   - [github.com/grpokit/grpokit/tokenizer]: Hugging Face tokenizer.json
//     and chat templates in pure Go.
//   - [github.com/grpokit/grpokit/lora]: LoRA adapters, merge, PEFT-format
//     save and load.
//   - [github.com/grpokit/grpokit/reward]: reward.Func, combinators, safe
//     concurrent evaluation and built-in rewards;
//     [github.com/grpokit/grpokit/reward/rewardmodel]: a Hugging Face
//     sequence-classification reward model as a reward.
//   - [github.com/grpokit/grpokit/dataset]: Example, Dataset and the
//     Parquet, JSON lines and JSON readers.
//   - [github.com/grpokit/grpokit/grpo]: the Trainer, its Config (named
//     after TRL's GRPOConfig), the Policy contract, multi-turn Envs,
//     evaluation and metrics.
//   - [github.com/grpokit/grpokit/loss]: advantages and the loss of every
//     loss type, as pure functions tested against TRL.
//   - [github.com/grpokit/grpokit/checkpoint]: crash-consistent checkpoint
//     folders and the output folder's lock and rules.
//   - [github.com/grpokit/grpokit/memplan]: the memory plan of a run and,
//     when asked, Go's memory limit.
//   - [github.com/grpokit/grpokit/sft]: supervised warm starts.
//   - [github.com/grpokit/grpokit/plot]: PNG figures of a run's metrics.
//   - [github.com/grpokit/grpokit/gguf]: GGUF export for llama.cpp and
//     Ollama.
//   - envs/...: the poker, GSM8K and Wordle tasks; examples/...: short
//     programs that train them through the public API; cmd/grpokit: the
//     command.
//
// docs/architecture.md draws the packages and follows one GRPO step
// through them.
//
// Computation runs on GoMLX's pure-Go backend by default, which needs
// nothing installed; set GOMLX_BACKEND=xla (or xla:cuda) to use an installed
// XLA PJRT plugin instead.
package grpokit
