// Command poker trains a language model with GRPO to name the class of a
// five-card poker hand (nine labels, constrained decoding, class-weighted
// reward; see package envs/poker).
//
// With no -model it builds a tiny Llama-shaped model and its tokenizer from
// scratch and trains every weight; only GRPO teaches it (no supervised
// step). With -model DIR it trains a Hugging Face checkpoint instead.
//
//	go run ./examples/poker                       # tiny model, default settings
//	go run ./examples/poker -steps 20             # a short run
//	go run ./examples/poker -model ~/models/SmolLM2-135M-Instruct -train lora -lr 1e-4
//
// The tiny model reads a start token, then the ranks of the cards as a
// player holds them (equal ranks together, bigger groups first), then their
// suits, one token each ("<|im_start|> Nine Nine Nine King Two clubs
// diamonds spades hearts spades"); -order rank sorts by rank instead. Task
// flags shape the tiny model (-hidden, -layers) and the trainer (-entropy,
// -schedule, -scale-rewards, -drop-tied); -time bounds training and
// -eval-every prints the held-out learning curve. The default cosine decay
// matters: at a constant rate the accuracy wanders by several points from
// one evaluation to the next, and the decay lets the policy settle.
//
// It prints the held-out accuracy per class before and after training and
// writes metrics.jsonl, reward.png, eval.jsonl and checkpoints to -out
// (default runs/poker), and the confusion matrix after training. Ctrl-C or
// SIGTERM stops after saving a checkpoint (exit status 130 or 143);
// -resume goes on from it.
package main

import "github.com/grpokit/grpokit/internal/exkit"

func main() { exkit.Main(defaults(), parse, run) }
