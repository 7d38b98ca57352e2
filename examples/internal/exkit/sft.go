package exkit

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/grpo"
)

// Pair is one supervised example: a prompt and the completion to imitate
// (the tokenizer's EOS is appended).
type Pair struct {
	Prompt grpo.Example
	Target string
}

// SFT is a small supervised warm start for teaching a from-scratch model an
// answer format before GRPO: grpo's SFTTrainer (cross-entropy on the target
// tokens only, AdamW, gradient clipping at 1) for steps steps of batch
// random pairs, the learning rate warming up over the first tenth and then
// decaying to 0 along a half cosine.
//
// The optimizer state SFT adds to the policy's context (Adam moments, step
// count, learning-rate variable) is deleted afterwards: GRPO's AdamW lives
// in the same scope, and would otherwise continue from the supervised
// moments and leave them out of its checkpoints as if they were weights.
func SFT(ctx context.Context, s *Setup, p *grpo.LMPolicy, pairs []Pair, steps, batch int, lr float64, seed int64, progress io.Writer) (err error) {
	if steps <= 0 {
		return nil
	}
	if len(pairs) == 0 {
		return fmt.Errorf("sft: no examples")
	}
	batch = max(2, batch)
	rows := make([]grpo.SFTPair, len(pairs))
	longest := 1
	eos := int32(s.Tok.EOS[0])
	for i, pr := range pairs {
		ids, err := p.PromptIDs(pr.Prompt, 0)
		if err != nil {
			return fmt.Errorf("sft: pair %d: %w", i, err)
		}
		rows[i].PromptIDs = toInt32(ids)
		rows[i].CompletionIDs = append(toInt32(s.Encode(pr.Target)), eos)
		longest = max(longest, len(rows[i].CompletionIDs))
	}
	cfg := grpo.DefaultConfig()
	cfg.NumGenerations, cfg.BatchSize = batch, batch
	cfg.LearningRate, cfg.LRSchedulerType, cfg.WarmupSteps = lr, grpo.ScheduleCosine, max(1, steps/10)
	cfg.MaxPromptLength, cfg.MaxCompletionLength = 0, longest
	cfg.Seed = seed

	mctx := p.Context()
	before := map[*mlctx.Variable]bool{}
	for v := range mctx.IterVariables() {
		before[v] = true
	}
	defer func() {
		var added []*mlctx.Variable
		for v := range mctx.IterVariables() {
			if !before[v] {
				added = append(added, v)
			}
		}
		for _, v := range added {
			if e := mctx.DeleteVariable(v.Scope(), v.Name()); e != nil && err == nil {
				err = fmt.Errorf("sft: %w", e)
			}
		}
	}()
	tr, err := grpo.NewSFTTrainer(p, cfg)
	if err != nil {
		return fmt.Errorf("sft: %w", err)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 77))
	start := time.Now()
	mb := make([]grpo.SFTPair, batch)
	sum, n := 0.0, 0
	for step := 1; step <= steps; step++ {
		for i := range mb {
			mb[i] = rows[rng.IntN(len(rows))]
		}
		loss, err := tr.Step(ctx, mb, steps)
		if err != nil {
			return fmt.Errorf("sft: %w", err)
		}
		sum, n = sum+loss, n+1
		if progress != nil && (step%10 == 0 || step == steps) {
			fmt.Fprintf(progress, "sft step %d/%d | loss %.3f (mean of last %d) | %.2fs/step\n",
				step, steps, sum/float64(n), n, time.Since(start).Seconds()/float64(step))
			sum, n = 0, 0
		}
	}
	return nil
}

func toInt32(xs []int) []int32 {
	out := make([]int32, len(xs))
	for i, x := range xs {
		out[i] = int32(x)
	}
	return out
}
