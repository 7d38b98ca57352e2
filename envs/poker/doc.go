// Package poker is a single-turn task: name the class of a five-card poker
// hand. It holds an exact oracle (Classify), a class-balanced sampler that
// builds hands of a chosen class directly, the prompt, the class-weighted
// reward, the label list for constrained decoding, and an evaluation
// report.
//
// There are nine classes in standard ranking, from HighCard to
// StraightFlush; a royal flush is a StraightFlush, and A-2-3-4-5 is a
// straight (the "wheel"). Random hands are 50% high card, so the sampler
// draws each class equally often instead; the reward then weights rarer
// classes higher (Weight) so that the policy is paid for learning them.
//
// Usage:
//
//	s := poker.NewSampler(1)
//	ex := s.Next()              // ex.Prompt, ex.Answer ("full house"), ex.Hand
//	r := poker.Reward(ex.Prompt, "full house", ex.Answer) // 2.5
//	labels := poker.Labels()    // the only strings the policy may emit
//
// Cards print as rank then suit letter: "As Kh Td 9c 2s" (T is ten).
// ParseHand reads that form and the symbol form ("A♠ K♥ 10♦ 9♣ 2♠").
//
// Values here are immutable and safe for concurrent use, except a Sampler,
// which is owned by one goroutine. The package does not import grpo or
// model; trainers adapt Sampler and Reward with thin wrappers.
package poker
