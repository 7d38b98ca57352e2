// Package wordle is the Wordle game as a multi-turn task for GRPO: the
// feedback rule (with repeated letters handled as the game does), the word
// lists of the original game (embedded), a plain-English rendering of the
// board, an action parser, per-move rewards, a Game that plays a whole
// game per training example, synthetic starting states, start words
// ranked by expected information, and an evaluation of win rate.
//
// The policy replies "<think>…</think><guess>crane</guess>". Each move
// earns a Breakdown: format, valid word, consistency with all feedback so
// far, partial credit for greens and yellows, and a win bonus that is
// larger for fewer guesses; Weights sum it into one reward.
//
// Multi-turn use (one game per example):
//
//	g := wordle.NewGame()
//	err := g.Reset("cigar", []string{"crane"}) // one guess already made
//	for !g.Done() {
//		reply := policy(g.Prompt())
//		res, err := g.Step(reply) // res.Reward, res.Message, res.Won
//	}
//
// Single-turn use: StateSampler draws states with 0–4 earlier guesses;
// State.Prompt is the prompt, and Rewards scores a reply from the
// reward.Sample that State.Sample builds.
//
// StartWords is the ranking written by cmd/startwords: every allowed
// guess scored by the entropy of its feedback over the answer list (SOARE
// first, 5.886 bits). Feedback is a base-3 code in [0, 243) (Feedback.Code).
//
// Word lists: data/answers.txt and data/allowed.txt are copies of the
// original game's lists, MIT-licensed packaging (data/LICENSE,
// data/SOURCE.md).
//
// A Game and a StateSampler belong to one goroutine; everything else is
// safe for concurrent use. The package does not import grpo or model.
package wordle
