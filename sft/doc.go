// Package sft warm-starts a policy with supervised fine-tuning before
// GRPO: cross-entropy on the completion tokens only (the prompt is
// context, not a target), with the same AdamW, learning-rate schedule and
// gradient clipping as the GRPO trainer, and its own small Config (TRL's
// SFTConfig names).
//
// A warm start teaches a small model the answer format, so that GRPO's
// first groups hold some right answers to learn from:
//
//	st, err := sft.New(policy, cfg) // policy: a grpo.Policy, such as *grpo.LMPolicy
//	if err != nil {
//		return err
//	}
//	if _, err := st.Train(ctx, data, sft.Options{Steps: 200}); err != nil { // targets: each Example's Answer
//		return err
//	}
//	if err := st.Release(); err != nil { // GRPO's AdamW then starts afresh
//		return err
//	}
//	tr, err := grpo.NewTrainer(policy, grpoCfg, rewards...)
//
// Train reads a dataset.Dataset through the policy's Encoder (prompt and
// target tokens); Step takes one step on token Pairs directly. The
// optimizer state lives in its own scope of the policy's context, apart
// from GRPO's, until Release deletes it.
package sft
