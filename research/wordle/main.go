// Command wordle is the Wordle study harness: every knob that was tried,
// with its findings in README.md beside it (examples/wordle is the short
// example of the same loop). It trains a language model to play Wordle as
// a multi-turn game (package envs/wordle): a supervised warm start on the games of a
// solver, then GRPO on whole games, each move rewarded for format, a valid
// word, consistency with all feedback so far and the share of that
// feedback it agrees with (wordle.Breakdown.Fit), with a KL term towards
// the warm start (beta 0.05). Partial credit for green and yellow letters
// and the win bonus are scored and logged but weigh 0 by default: they
// depend on the secret and, on training answers the warm start has seen,
// reward remembering answers rather than reading the board (-weights sets
// all six weights).
//
// With no -model it builds a tiny Llama-shaped model (2 layers of width
// 64) whose prompt is the board as a grid of facts, one token each, with
// one cell per letter position in every row ("THREE Xn Pr YrB … GcA UB …
// GUESS": turn three, no N, an R somewhere but not in position 2, C in
// position 1, position 2 unknown), and which spells its guess letter by
// letter under constrained decoding: a trie of the reply format around
// the 2,315 answer words, so that every move is a valid word and the
// model only learns which. The warm start imitates wordle.Solver (a
// hard-mode player: consistent guesses, openers ranked by entropy) on
// games for the training answers, whole games and games started from
// random mid-game states; GRPO then plays whole games
// through the multi-turn grpo.Env. Both are evaluated on 200 held-out
// answers that are never a secret in training. With -model DIR it trains
// a Hugging Face checkpoint on the game's English prompts (no trie):
//
//	go run ./research/wordle                     # tiny model
//	go run ./research/wordle -config wordle.json # settings from a file
//	go run ./research/wordle -model ~/models/Qwen2.5-0.5B-Instruct -train lora -lr 1e-5 -sft-steps -1
//
// It prints held-out games after the warm start and after GRPO (win rate,
// mean guesses of the wins, consistent and invalid moves) and writes
// metrics.jsonl, reward.png, wins.png (cumulative wins of the training
// games), eval.jsonl and checkpoints to -out (default runs/wordle). Ctrl-C
// or SIGTERM stops after saving a checkpoint (exit status 130 or 143).
package main

import "github.com/grpokit/grpokit/internal/exkit"

func main() { exkit.Main(defaults(), parse, run) }
