// Package loss holds the math of GRPO and its relatives: group advantages
// from rewards, and the per-token policy losses (TRL's loss types) with
// their KL term, clipping, masks and entropy bonus. Everything here is a
// pure function: plain Go over float64 slices for advantages, and GoMLX
// graph builders for the losses. Nothing here knows a model, a trainer or
// a file; package grpo calls these on every step.
//
// # Advantages
//
// GroupAdvantages turns one reward per completion, laid out in groups of g
// completions of one prompt, into advantages (reward − group mean, divided
// by the group's, the batch's or no standard deviation: ScaleRewards).
// RewardAdvantages does the same for several weighted rewards, combined
// before or after normalizing (Aggregation). TokenAdvantages is the
// per-token term of token-level credit.
//
//	adv, err := loss.GroupAdvantages([]float64{1, 0, 1, 0}, 4, loss.ScaleGroup)
//	// adv.Values: 0.8659, −0.8659, 0.8659, −0.8659
//
// # Losses
//
// TokenLoss builds the per-token loss of one micro-batch from the policy's,
// the old and the reference log-probs (Inputs) and the hyperparameters
// (Spec), for every Type: grpo, bnpo, dr_grpo, dapo (TRL's default),
// luspo, cispo, sapo and vespo, at token or sequence (GSPO) level.
// TokenWeights gives the weights that reduce it to TRL's scalar loss for
// the loss type (WeightedLoss sums them), so a step accumulated over
// micro-batches is the loss of the whole step. HighEntropyMask and
// EntropyBonus are the entropy mask and bonus. The log-probs and entropies
// the loss reads come from model.TokenLogProbs (through
// grpo.PolicyLogProbs).
//
// Graph builders panic on error, as GoMLX's do; the slice functions return
// errors.
//
// # References
//
// The formulas and names follow TRL 1.16.0's GRPOTrainer. The tests match
// the numbers TRL's own code computes (grpo/testdata/trl-1.16, written by
// internal/trlref), the transcribed TRL 1.10 and v0.21.0 references where
// TRL has not changed since (../shared/golden/trl-1.10 and
// ../shared/golden/llama-tiny), and numbers worked out by hand. LOSSES.md in this directory says when to
// pick which loss type, with the paper each comes from.
package loss
