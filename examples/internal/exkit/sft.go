package exkit

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/model"
)

// Pair is one supervised example: a prompt and the completion to imitate
// (the tokenizer's EOS is appended).
type Pair struct {
	Prompt grpo.Example
	Target string
}

// SFT is a small supervised warm start (cross-entropy on the target
// tokens, Adam) for teaching a from-scratch model an answer format before
// GRPO. It is a stand-in until grpo ships its SFT trainer. Optimizer state
// is removed from the policy's context afterwards, so GRPO starts clean.
func SFT(ctx context.Context, s *Setup, p *grpo.LMPolicy, pairs []Pair, steps, batch int, lr float64, seed int64, progress io.Writer) (err error) {
	if steps <= 0 {
		return nil
	}
	if len(pairs) == 0 {
		return fmt.Errorf("sft: no examples")
	}
	mctx := p.Context()
	before := map[*mlctx.Variable]bool{}
	for v := range mctx.IterVariables() {
		before[v] = true
	}
	defer func() {
		for v := range mctx.IterVariables() {
			if !before[v] {
				if e := mctx.DeleteVariable(v.Scope(), v.Name()); e != nil && err == nil {
					err = fmt.Errorf("sft: %w", e)
				}
			}
		}
	}()
	opt := optimizers.Adam().LearningRate(lr).Done()
	exec, err := mlctx.NewExec(p.Backend(), mctx, func(ctx *mlctx.Context, tokens, mask, targets, lossMask *graph.Node) *graph.Node {
		c := targets.Shape().Dim(1)
		logits := p.Logits(ctx, grpo.LogitsInputs{Tokens: tokens, Mask: mask, PromptLen: tokens.Shape().Dim(1) - c})
		lp := model.TokenLogProbs(logits, targets)
		n := graph.Max(graph.ReduceAllSum(lossMask), graph.ScalarOne(lossMask.Graph(), dtypes.Float32))
		loss := graph.Neg(graph.Div(graph.ReduceAllSum(graph.Mul(lp, lossMask)), n))
		opt.UpdateGraph(ctx, tokens.Graph(), loss)
		return loss
	})
	if err != nil {
		return fmt.Errorf("sft: %w", err)
	}
	exec.SetMaxCache(64)
	rng := rand.New(rand.NewPCG(uint64(seed), 77))
	eos := s.Tok.EOS[0]
	start := time.Now()
	for step := 1; step <= steps; step++ {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		var prompts, targets [][]int
		for range batch {
			pr := pairs[rng.IntN(len(pairs))]
			ids, err := p.PromptIDs(pr.Prompt, 0)
			if err != nil {
				return fmt.Errorf("sft: %w", err)
			}
			prompts = append(prompts, ids)
			targets = append(targets, append(s.Encode(pr.Target), eos))
		}
		args := pack(prompts, targets, s.Tok.PAD)
		out, err := exec.Exec(args...)
		if err != nil {
			return fmt.Errorf("sft: step %d: %w", step, err)
		}
		loss := tensors.ToScalar[float32](out[0])
		if progress != nil && (step%10 == 0 || step == steps) {
			fmt.Fprintf(progress, "sft step %d/%d | loss %.3f | %.2fs/step\n", step, steps, loss, time.Since(start).Seconds()/float64(step))
		}
	}
	return nil
}

// pack lays out prompts left-padded to P and targets right-padded to C
// (both rounded up to a power of two, so few graphs are compiled).
func pack(prompts, targets [][]int, pad int) []any {
	p, c := 1, 1
	for i := range prompts {
		p, c = max(p, len(prompts[i])), max(c, len(targets[i]))
	}
	p, c = pow2(p), pow2(c)
	b, l := len(prompts), p+c
	tok := make([]int32, b*l)
	mask := make([]int32, b*l)
	tgt := make([]int32, b*c)
	lm := make([]float32, b*c)
	for i := range prompts {
		for j := range tok[i*l : (i+1)*l] {
			tok[i*l+j] = int32(pad)
		}
		off := i*l + p - len(prompts[i])
		for j, id := range prompts[i] {
			tok[off+j], mask[off+j] = int32(id), 1
		}
		for j, id := range targets[i] {
			tok[i*l+p+j], mask[i*l+p+j] = int32(id), 1
			tgt[i*c+j], lm[i*c+j] = int32(id), 1
		}
	}
	return []any{
		tensors.FromFlatDataAndDimensions(tok, b, l),
		tensors.FromFlatDataAndDimensions(mask, b, l),
		tensors.FromFlatDataAndDimensions(tgt, b, c),
		tensors.FromFlatDataAndDimensions(lm, b, c),
	}
}

func pow2(n int) int {
	b := 1
	for b < n {
		b *= 2
	}
	return b
}
