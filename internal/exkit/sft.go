package exkit

import (
	"context"
	"fmt"
	"io"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/sft"
)

// Pair is one supervised example: a prompt and the completion to imitate
// (the tokenizer's EOS is appended).
type Pair struct {
	Prompt dataset.Example
	Target string
}

// SFT is a small supervised warm start for teaching a from-scratch model an
// answer format before GRPO: sft.Trainer.Train for steps steps of
// batch pairs, the learning rate warming up over the first tenth and then
// decaying to 0 along a half cosine, its memory plan checked against
// s.Memory and set as Go's memory limit; its optimizer state is released
// afterwards so that GRPO's AdamW starts afresh.
func SFT(ctx context.Context, s *Setup, p *grpo.LMPolicy, pairs []Pair, steps, batch int, lr float64, seed int64, progress io.Writer) error {
	if steps <= 0 {
		return nil
	}
	if len(pairs) == 0 {
		return fmt.Errorf("sft: no examples")
	}
	data := make(dataset.SliceDataset, len(pairs))
	longest := 1
	for i, pr := range pairs {
		data[i] = pr.Prompt
		data[i].Answer = pr.Target
		longest = max(longest, len(s.Encode(pr.Target))+1)
	}
	return warmStart(s, p, steps, max(2, batch), lr, seed, longest, func(tr *sft.Trainer, opts sft.Options) error {
		_, err := tr.Train(ctx, data, opts)
		return err
	}, progress)
}

// SFTTokens is SFT on token pairs (sft.Trainer.TrainPairs): demonstrations
// whose masks keep some tokens out of the loss, such as tool results in a
// trajectory (sft.FromTrajectory). batch is used as given.
func SFTTokens(ctx context.Context, s *Setup, p *grpo.LMPolicy, pairs []sft.Pair, steps, batch int, lr float64, seed int64, progress io.Writer) error {
	if steps <= 0 {
		return nil
	}
	longest := 1
	for _, pr := range pairs {
		longest = max(longest, len(pr.CompletionIDs))
	}
	return warmStart(s, p, steps, batch, lr, seed, longest, func(tr *sft.Trainer, opts sft.Options) error {
		_, err := tr.TrainPairs(ctx, pairs, opts)
		return err
	}, progress)
}

// warmStart runs train on an sft.Trainer with the warm start's settings
// (longest: the longest target in tokens), within the run's memory budget,
// then releases the trainer's optimizer state.
func warmStart(s *Setup, p *grpo.LMPolicy, steps, batch int, lr float64, seed int64, longest int, train func(*sft.Trainer, sft.Options) error, progress io.Writer) error {
	cfg := sft.DefaultConfig()
	cfg.BatchSize = batch
	cfg.LearningRate, cfg.LRSchedulerType, cfg.WarmupSteps = lr, grpo.ScheduleCosine, max(1, steps/10)
	cfg.MaxPromptLength, cfg.MaxCompletionLength = 0, longest
	cfg.Seed = seed
	tr, err := sft.New(p, cfg)
	if err != nil {
		return fmt.Errorf("sft: %w", err)
	}
	// The run's budget, and the plan as Go's memory limit, as GRPO has.
	budget := s.Memory
	if err := train(tr, sft.Options{Steps: steps, Progress: progress, Memory: &budget, GCLimit: true}); err != nil {
		return fmt.Errorf("sft: %w", err)
	}
	return tr.Release()
}
