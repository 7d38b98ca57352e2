package grpo

import (
	"github.com/gomlx/gomlx/pkg/core/graph"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/internal/vjp"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
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

// LogProbsOptions say how PolicyLogProbs builds the log-probabilities.
// The zero value is the policy's own log-probs at temperature 1, in chunks
// of the default size.
type LogProbsOptions struct {
	// Temperature divides the logits first (Config.Temperature); 0 means 1.
	Temperature float64
	// Reference builds the reference model's log-probs (see
	// LogitsInputs.Reference).
	Reference bool
	// Allowed are the constraint inputs (ids, any) of MaskLogits; nil for
	// none.
	Allowed []*graph.Node
	// ChunkSize is the completion positions per chunk of a HeadPolicy's
	// logits; 0 picks (see Config.LogitsChunkSize).
	ChunkSize int
	// GradientCheckpointing is LogitsInputs.GradientCheckpointing.
	GradientCheckpointing bool
	// Group is LogitsInputs.Group: rows in groups of Group that share
	// their prompt columns; 0 for none.
	Group int
}

// chunkSize returns the positions per chunk for b rows of a vocabulary of
// v tokens: o.chunk, or as many as fit logitsChunkElements (at least one).
func (o LogProbsOptions) chunkSize(b, v int) int {
	if o.ChunkSize > 0 {
		return o.ChunkSize
	}
	return max(1, logitsChunkElements/max(1, b*v))
}

// PolicyLogProbs builds the policy's (or reference's) per-token
// log-probabilities and entropies [B, C] of the completion tokens of tokens
// [B, P+C] (mask [B, P+C] marks the real tokens), with C = completionLen:
// the one log-prob builder of the GRPO and SFT losses and of the old and
// reference log-probs. A HeadPolicy's logits are made one chunk of
// positions at a time, each chunk checkpointed (vjp.Checkpoint) so that
// the backward pass makes it again instead of keeping it. This is a graph
// building function and panics on error.
func PolicyLogProbs(ctx *mlctx.Context, p Policy, tokens, mask *graph.Node, completionLen int, o LogProbsOptions) (logp, entropy *graph.Node) {
	temperature := o.Temperature
	if temperature == 0 {
		temperature = 1
	}
	l := tokens.Shape().Dim(1)
	promptLen := l - completionLen
	in := LogitsInputs{Tokens: tokens, Mask: mask, PromptLen: promptLen, Reference: o.Reference, GradientCheckpointing: o.GradientCheckpointing, Group: o.Group}
	targets := Slice(tokens, AxisRange(), AxisRange(promptLen, l))
	hp, ok := p.(HeadPolicy)
	if !ok {
		logits := p.Logits(ctx, in)
		if o.Allowed != nil {
			logits = MaskLogits(logits, o.Allowed[0], o.Allowed[1])
		}
		return model.TokenLogProbs(logits, targets, temperature)
	}
	hidden := hp.Hidden(ctx, in)
	b, c := hidden.Shape().Dim(0), hidden.Shape().Dim(1)
	n := o.chunkSize(b, vocabOf(ctx, hp, hidden, o.Reference))
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
		if o.Allowed != nil {
			ids, any = cols(o.Allowed[0]), cols(o.Allowed[1])
		}
		both := vjp.Checkpoint(func(h *Node) *Node {
			logits := hp.Head(ctx, h, o.Reference)
			if ids != nil {
				logits = MaskLogits(logits, ids, any)
			}
			lp, ent := model.TokenLogProbs(logits, chunkTargets, temperature)
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
// train is set for the graph that is differentiated, group is the
// micro-batch's (groupOf).
func (t *Trainer) logProbsOptions(reference, train bool, allowed []*Node, group int) LogProbsOptions {
	return LogProbsOptions{
		Temperature: t.cfg.Temperature, Reference: reference, Allowed: allowed,
		ChunkSize: t.cfg.LogitsChunkSize, GradientCheckpointing: t.cfg.GradientCheckpointing && train,
		Group: group,
	}
}
