// Command wordle trains a language model with GRPO to play Wordle as a
// multi-turn game (package envs/wordle): every training example is a
// whole game, each move is rewarded for format, a valid word, consistency
// with the feedback so far, green and yellow letters, and a win.
//
// With no -model it builds a tiny Llama-shaped model whose tokenizer has
// one token per answer word, warms it up with a short supervised run on the
// reply format (<think>…</think><guess>word</guess>), and then runs GRPO;
// a model that small learns the format and valid, consistent guesses far
// more than it learns to win. With -model DIR it trains a Hugging Face
// checkpoint on the game's English prompts:
//
//	go run ./examples/wordle                     # tiny model
//	go run ./examples/wordle -config wordle.json # settings from a file
//	go run ./examples/wordle -model ~/models/Qwen2.5-0.5B-Instruct -train lora -lr 1e-5
//
// It prints held-out games before and after training and writes
// metrics.jsonl, reward.png, wins.png (cumulative wins of the training
// games), eval.jsonl and checkpoints to -out (default runs/wordle). Ctrl-C
// stops after saving a checkpoint.
package main

import "github.com/grpokit/grpokit/examples/internal/exkit"

func main() { exkit.Main(defaults(), parse, run) }
