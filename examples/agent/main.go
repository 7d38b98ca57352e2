// Command agent trains a language model to use a Go tool with GRPO on
// whole tool-calling trajectories: multiplying a three-digit number by a
// two-digit one, which a model this small cannot do in its head but can
// with a calculator (agent.Calculator, a typed Go function).
//
// With no -model it builds a tiny Llama-shaped model and its tokenizer
// from scratch and warms it up on a few hundred demonstrations, some that
// call the calculator and some that answer at once; then GRPO trains it on
// trajectories (generate, run the calls, append the results, generate
// again), rewarded for the right product, and it learns to call the tool.
// It prints held-out accuracy and tool-call rate before and after:
//
//	go run ./examples/agent
//
// With -model DIR it trains a Hugging Face checkpoint whose chat template
// renders tools (Qwen2.5, Qwen3, Llama 3.1 / 3.2; Gemma 3 by a
// convention):
//
//	go run ./examples/agent -model ~/models/Qwen3-0.6B -train lora -lr 1e-5
//
// -force-format restricts every turn of a -model run to the calculator
// call of 123 × 45 or one of two numbers (constrained decoding), and makes
// every problem 123 × 45, so that a folder with random weights (go run
// ./bench/randomhf) runs the whole tool path with rewards that differ.
package main

import "github.com/grpokit/grpokit/internal/exkit"

func main() { exkit.Main(defaults(), parse, run) }
