package sft

import (
	"fmt"

	"github.com/grpokit/grpokit/grpo"
)

// Config holds the SFT settings, named as TRL's SFTConfig names them.
// Start from DefaultConfig.
type Config struct {
	// BatchSize is the examples (or pairs) of one optimizer step. Default
	// 8. TRL: per_device_train_batch_size.
	BatchSize int `json:"per_device_train_batch_size"`
	// LearningRate is AdamW's peak learning rate. Default 2e-5.
	LearningRate float64 `json:"learning_rate"`
	// LRSchedulerType is the decay after warmup. Default linear.
	LRSchedulerType grpo.Schedule `json:"lr_scheduler_type"`
	// WarmupSteps is the linear warmup from 0, in optimizer steps; when 0,
	// WarmupRatio × the run's steps. Default 0.
	WarmupSteps int `json:"warmup_steps"`
	// WarmupRatio is the warmup as a fraction of the run's steps, in
	// [0, 1]. Default 0.
	WarmupRatio float64 `json:"warmup_ratio"`
	// WeightDecay is AdamW's decoupled weight decay. Default 0.
	WeightDecay float64 `json:"weight_decay"`
	// AdamBeta1, AdamBeta2 and AdamEpsilon are Adam's. Defaults 0.9,
	// 0.999, 1e-8.
	AdamBeta1   float64 `json:"adam_beta1"`
	AdamBeta2   float64 `json:"adam_beta2"`
	AdamEpsilon float64 `json:"adam_epsilon"`
	// MaxGradNorm clips the gradients' global L2 norm; 0 disables
	// clipping. Default 1.
	MaxGradNorm float64 `json:"max_grad_norm"`
	// MaxPromptLength keeps the last MaxPromptLength prompt tokens; 0
	// keeps them all. Default 512.
	MaxPromptLength int `json:"max_prompt_length"`
	// MaxCompletionLength truncates the completion to learn (≥ 1). Default
	// 512. TRL: max_length covers both.
	MaxCompletionLength int `json:"max_completion_length"`
	// GradientCheckpointing recomputes each decoder layer in the backward
	// pass: about one more forward pass of time for keeping a layer's
	// inputs instead of all its activations. Default false.
	GradientCheckpointing bool `json:"gradient_checkpointing"`
	// Seed seeds the order Train visits the examples in. Default 42.
	Seed int64 `json:"seed"`
}

// DefaultConfig returns TRL's SFTConfig defaults for the fields above.
func DefaultConfig() Config {
	return Config{
		BatchSize: 8, LearningRate: 2e-5, LRSchedulerType: grpo.ScheduleLinear,
		AdamBeta1: 0.9, AdamBeta2: 0.999, AdamEpsilon: 1e-8, MaxGradNorm: 1,
		MaxPromptLength: 512, MaxCompletionLength: 512, Seed: 42,
	}
}

// Validate reports the first setting out of range.
func (c Config) Validate() error {
	switch {
	case c.BatchSize < 1:
		return fmt.Errorf("sft: per_device_train_batch_size %d: want ≥ 1", c.BatchSize)
	case !(c.LearningRate >= 0):
		return fmt.Errorf("sft: learning_rate %v: want ≥ 0", c.LearningRate)
	case c.LRSchedulerType != grpo.ScheduleLinear && c.LRSchedulerType != grpo.ScheduleCosine && c.LRSchedulerType != grpo.ScheduleConstant:
		return fmt.Errorf("sft: lr_scheduler_type %q: want linear, cosine or constant", c.LRSchedulerType)
	case c.WarmupSteps < 0 || !(c.WarmupRatio >= 0 && c.WarmupRatio <= 1):
		return fmt.Errorf("sft: warmup_steps %d, warmup_ratio %v: want ≥ 0 and in [0, 1]", c.WarmupSteps, c.WarmupRatio)
	case !(c.WeightDecay >= 0) || !(c.AdamBeta1 >= 0 && c.AdamBeta1 < 1) || !(c.AdamBeta2 >= 0 && c.AdamBeta2 < 1) || !(c.AdamEpsilon > 0):
		return fmt.Errorf("sft: weight_decay %v, adam_beta1 %v, adam_beta2 %v, adam_epsilon %v: out of range", c.WeightDecay, c.AdamBeta1, c.AdamBeta2, c.AdamEpsilon)
	case !(c.MaxGradNorm >= 0):
		return fmt.Errorf("sft: max_grad_norm %v: want ≥ 0", c.MaxGradNorm)
	case c.MaxPromptLength < 0 || c.MaxCompletionLength < 1:
		return fmt.Errorf("sft: max_prompt_length %d, max_completion_length %d: want ≥ 0 and ≥ 1", c.MaxPromptLength, c.MaxCompletionLength)
	}
	return nil
}

// LearningRateAt returns the learning rate of optimizer step (0-based) of
// a run of total steps (grpo.ScheduledRate).
func (c Config) LearningRateAt(step, total int) float64 {
	return grpo.ScheduledRate(c.LRSchedulerType, c.LearningRate, c.WarmupSteps, c.WarmupRatio, step, total)
}
