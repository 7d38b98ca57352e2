package grpo

import (
	"github.com/gomlx/gomlx/pkg/core/graph"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/internal/vjp"
	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/memplan"
)

// HeadPolicy is an optional interface of a Policy whose logits are a head
// (the LM head) over hidden states. The trainer then never holds the
// [B, C, V] logits and their softmax whole: it maps the hidden states to
// log-probabilities and entropies a chunk of completion positions at a time
// (Config.LogitsChunkSize) and builds each chunk's logits again in the
// backward pass, as Liger's and Unsloth's chunked losses do. LMPolicy
// implements it; for other Policies the trainer calls Logits.
//
// Head(ctx, Hidden(ctx, in), in.Reference) must equal Logits(ctx, in), and
// Head must be a deterministic function of its input.
type HeadPolicy interface {
	Policy
	// Hidden builds the hidden states [B, C, H] that Head maps to the
	// logits Logits would return (same inputs, same positions). Graph
	// building; panics on error.
	Hidden(ctx *mlctx.Context, in LogitsInputs) *graph.Node
	// Head maps hidden states [B, n, H] to float32 logits [B, n, V], of the
	// reference model when reference is set. Graph building; panics on
	// error.
	Head(ctx *mlctx.Context, hidden *graph.Node, reference bool) *graph.Node
}

// logitsChunkElements is the size, in logits, of the chunks that
// LogitsChunkSize 0 picks (the memory plan counts the same).
const logitsChunkElements = memplan.LogitsChunkElements

// logProbsOptions say how policyLogProbs builds the log-probabilities.
type logProbsOptions struct {
	temperature float64
	reference   bool    // the reference model's
	allowed     []*Node // constraint inputs (ids, any) of MaskLogits; nil for none
	chunk       int     // completion positions per chunk; 0 picks (see Config.LogitsChunkSize)
	checkpoint  bool    // LogitsInputs.GradientCheckpointing
}

// chunkSize returns the positions per chunk for b rows of a vocabulary of
// v tokens: o.chunk, or as many as fit logitsChunkElements (at least one).
func (o logProbsOptions) chunkSize(b, v int) int {
	if o.chunk > 0 {
		return o.chunk
	}
	return max(1, logitsChunkElements/max(1, b*v))
}

// policyLogProbs builds the policy's (or reference's) per-token
// log-probabilities and entropies [B, C] of the completion tokens of tokens
// [B, P+C], with C = completionLen. A HeadPolicy's logits are made one
// chunk of positions at a time, each chunk checkpointed (vjp.Checkpoint) so
// that the backward pass makes it again instead of keeping it.
func policyLogProbs(ctx *mlctx.Context, p Policy, tokens, mask *Node, completionLen int, o logProbsOptions) (logp, entropy *Node) {
	l := tokens.Shape().Dim(1)
	promptLen := l - completionLen
	in := LogitsInputs{Tokens: tokens, Mask: mask, PromptLen: promptLen, Reference: o.reference, GradientCheckpointing: o.checkpoint}
	targets := Slice(tokens, AxisRange(), AxisRange(promptLen, l))
	hp, ok := p.(HeadPolicy)
	if !ok {
		logits := p.Logits(ctx, in)
		if o.allowed != nil {
			logits = MaskLogits(logits, o.allowed[0], o.allowed[1])
		}
		return loss.TokenLogProbs(logits, targets, o.temperature)
	}
	hidden := hp.Hidden(ctx, in)
	b, c := hidden.Shape().Dim(0), hidden.Shape().Dim(1)
	n := o.chunkSize(b, vocabOf(ctx, hp, hidden, o.reference))
	var logps, entropies []*Node
	for start := 0; start < c; start += n {
		end := min(c, start+n)
		cols := func(x *Node) *Node {
			if start == 0 && end == c {
				return x
			}
			return Slice(x, AxisRange(), AxisRange(start, end))
		}
		chunkTargets := cols(targets)
		var ids, any *Node
		if o.allowed != nil {
			ids, any = cols(o.allowed[0]), cols(o.allowed[1])
		}
		both := vjp.Checkpoint(func(h *Node) *Node {
			logits := hp.Head(ctx, h, o.reference)
			if ids != nil {
				logits = MaskLogits(logits, ids, any)
			}
			lp, ent := loss.TokenLogProbs(logits, chunkTargets, o.temperature)
			return Stack([]*Node{lp, ent}, -1) // [B, n, 2]
		}, cols(hidden))
		logps = append(logps, Reshape(Slice(both, AxisRange(), AxisRange(), AxisElem(0)), b, end-start))
		entropies = append(entropies, Reshape(Slice(both, AxisRange(), AxisRange(), AxisElem(1)), b, end-start))
	}
	if len(logps) == 1 {
		return logps[0], entropies[0]
	}
	return Concatenate(logps, 1), Concatenate(entropies, 1)
}

// vocabOf returns the vocabulary size of hp's head, from the shape of the
// logits of one position (shape inference only: the node is never run).
func vocabOf(ctx *mlctx.Context, hp HeadPolicy, hidden *Node, reference bool) int {
	one := Slice(hidden, AxisRange(0, 1), AxisRange(0, 1))
	return hp.Head(ctx, one, reference).Shape().Dim(-1)
}

// logProbsOptions returns the options of the trainer's log-prob graphs;
// train is set for the graph that is differentiated.
func (t *Trainer) logProbsOptions(reference, train bool, allowed []*Node) logProbsOptions {
	return logProbsOptions{
		temperature: t.cfg.Temperature, reference: reference, allowed: allowed,
		chunk: t.cfg.LogitsChunkSize, checkpoint: t.cfg.GradientCheckpointing && train,
	}
}
