// Command gsm8k trains a language model with GRPO on GSM8K grade-school
// math problems with the five rewards of the well-known GRPO GSM8K seed
// (format, integer answer, correctness; see package envs/gsm8k).
//
// With no -model it builds a tiny Llama-shaped model and its tokenizer from
// scratch, warms it up with a short supervised run on the answer format,
// and then runs GRPO; a model that small learns the format, not the
// arithmetic. With -model DIR it trains a Hugging Face checkpoint (or a
// .gguf file) instead:
//
//	go run ./examples/gsm8k                                   # tiny model
//	go run ./examples/gsm8k -model ~/models/Qwen2.5-0.5B-Instruct -train lora -lr 1e-5
//
// A model too small to answer in the seed's format earns no reward, and
// GRPO has nothing to learn from; -warm-out DIR first teaches it the format
// with -sft-steps supervised steps on worked solutions and writes it to DIR,
// from which GRPO then starts (docs/results/gsm8k-real.md):
//
//	go run ./examples/gsm8k -model smollm2-hf -train lora -lora-rank 16 -sft-steps 80 -max-completion 200 -warm-out smollm2-sft
//	go run ./examples/gsm8k -model smollm2-sft -config bench/trl/gsm8k.yaml
//
// The data are the copy of GSM8K shipped in package envs/gsm8k, or -data, a
// folder holding train.jsonl and test.jsonl. It prints the held-out
// accuracy, format rates and mean answer length before and after training
// and writes metrics.jsonl, reward.png, eval.jsonl (each evaluation's
// figures), eval-completions.jsonl (every answer) and checkpoints to -out (default
// runs/gsm8k). Ctrl-C or SIGTERM stops after saving a checkpoint (exit
// status 130 or 143).
package main

import "github.com/grpokit/grpokit/internal/exkit"

func main() { exkit.Main(defaults(), parse, run) }
