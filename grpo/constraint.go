package grpo

import (
	"github.com/gomlx/gomlx/pkg/core/graph"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/grpokit/grpokit/model"
)

// Constrained is an optional interface of a Policy that samples under a
// constraint (constrained decoding, e.g. a model.Trie of the allowed
// answers). The trainer then computes log-probabilities, entropies and KL
// over the distribution the sampler really draws from: the logits of the
// tokens the constraint forbids are masked out before the softmax.
//
// Without the mask the loss would differentiate the unconstrained softmax:
// the entropy bonus then spreads probability over tokens that are never
// sampled (flattening the allowed ones with them), and forced tokens (an
// EOS that the constraint makes certain) get gradients they should not.
type Constrained interface {
	// Constraint returns the constraint Generate samples under; nil means
	// none.
	Constraint() model.Constraint
}

// maskedLogit is added to the logits of forbidden tokens: finite, so that
// p·log p stays 0 (not NaN) in the entropy.
const maskedLogit = -1e9

// constraintOf returns the policy's constraint, nil when it has none.
// When the policy is an LMPolicy, the constraint is wrapped with the
// vocabulary size so that long allowed lists become a dense mask (see
// allowedInputs).
func constraintOf(p Policy) model.Constraint {
	c, ok := p.(Constrained)
	if !ok || c.Constraint() == nil {
		return nil
	}
	if lm, ok := p.(*LMPolicy); ok && lm.model != nil {
		return vocabConstraint{Constraint: c.Constraint(), vocab: lm.model.Config().VocabSize}
	}
	return c.Constraint()
}

// vocabConstraint is a constraint with the size of the vocabulary it
// draws from.
type vocabConstraint struct {
	model.Constraint
	vocab int
}

// denseAbove is the longest allowed list that allowedInputs packs as ids;
// longer lists (a trie over thousands of words) would make MaskLogits'
// one-hot [B, C, K, V] huge, so they go as a dense [B, C, V] mask.
const denseAbove = 64

// allowedInputs returns the constraint's allowed tokens at every
// completion position of mb: ids [B, C, K] int32 (−1 pads each list to K),
// and any [B, C] float32, 1 where every token is allowed (no constraint
// there, padding, or positions past the completion). When a list is longer
// than denseAbove and c knows its vocabulary size V (vocabConstraint), ids
// is instead a float32 mask [B, C, V], 1 for the allowed tokens.
func (mb *microBatch) allowedInputs(c model.Constraint) (ids, any *tensors.Tensor) {
	l := mb.P + mb.C
	lists := make([][]int, mb.B*mb.C)
	k := 1
	for b := 0; b < mb.B; b++ {
		n := 0 // completion tokens of row b: the mask's ones after P
		for j := 0; j < mb.C; j++ {
			if mb.Mask[b*l+mb.P+j] != 0 {
				n = j + 1
			}
		}
		prefix := make([]int, 0, n)
		for j := 0; j < n; j++ {
			if mb.ToolMask != nil && mb.ToolMask[b*mb.C+j] == 0 {
				// A token a tool inserted: no constraint, and the model's
				// next turn starts a new prefix, as it was generated.
				prefix = prefix[:0]
				continue
			}
			lists[b*mb.C+j] = c.Allowed(prefix)
			k = max(k, len(lists[b*mb.C+j]))
			prefix = append(prefix, int(mb.Tokens[b*l+mb.P+j]))
		}
	}
	flatAny := make([]float32, mb.B*mb.C)
	if vc, ok := c.(vocabConstraint); ok && k > denseAbove {
		v := vc.vocab
		dense := make([]float32, mb.B*mb.C*v)
		for i, list := range lists {
			if list == nil {
				flatAny[i] = 1
			}
			for _, id := range list {
				if id >= 0 && id < v {
					dense[i*v+id] = 1
				}
			}
		}
		return tensors.FromFlatDataAndDimensions(dense, mb.B, mb.C, v),
			tensors.FromFlatDataAndDimensions(flatAny, mb.B, mb.C)
	}
	flatIDs := make([]int32, mb.B*mb.C*k)
	for i, list := range lists {
		if list == nil {
			flatAny[i] = 1
		}
		for j := 0; j < k; j++ {
			flatIDs[i*k+j] = -1
			if j < len(list) {
				flatIDs[i*k+j] = int32(list[j])
			}
		}
	}
	return tensors.FromFlatDataAndDimensions(flatIDs, mb.B, mb.C, k),
		tensors.FromFlatDataAndDimensions(flatAny, mb.B, mb.C)
}

// MaskLogits sets the logits of tokens outside the allowed lists to −1e9:
// logits [B, C, V], ids [B, C, K] (allowed token ids, −1 for none) or,
// when ids is a float, the dense mask [B, C, V] (1 where allowed), any
// [B, C] (1 where every token is allowed). This is a graph building
// function and panics on error.
func MaskLogits(logits, ids, any *graph.Node) *graph.Node {
	v := logits.Shape().Dim(-1)
	var allowed *Node
	if ids.DType().IsFloat() {
		allowed = ConvertDType(ids, logits.DType())
	} else {
		allowed = ReduceMax(OneHot(ids, v, logits.DType()), 2) // [B, C, V]
	}
	allowed = Max(allowed, ExpandAxes(ConvertDType(any, logits.DType()), -1))
	// (allowed − 1) · 1e9: 0 where allowed, −1e9 where not.
	return Add(logits, MulScalar(AddScalar(allowed, -1), -maskedLogit))
}

// withAllowed appends mb's constraint inputs to in when c is not nil.
func (mb *microBatch) withAllowed(in []any, c model.Constraint) []any {
	if c == nil {
		return in
	}
	ids, any := mb.allowedInputs(c)
	return append(in, ids, any)
}
