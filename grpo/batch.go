package grpo

import (
	"encoding/json"
	"math"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/grpokit/grpokit/internal/pad"
	"github.com/grpokit/grpokit/loss"
)

// row is one completion of a step with everything the loss and the logs
// need.
type row struct {
	Step       int     `json:"step"`
	Prompt     string  `json:"prompt"`
	Completion string  `json:"completion"`
	Answer     string  `json:"answer,omitempty"`
	Turn       int     `json:"turn"`
	Episode    int     `json:"episode"`
	Rewards    scores  `json:"rewards"`
	Reward     float64 `json:"reward"`
	Advantage  float64 `json:"advantage"`
	Truncated  bool    `json:"truncated"`
	Dropped    bool    `json:"dropped,omitempty"` // in a zero-std group left out of the loss
	// TokenRewards and TokenAdv are the token credit's rewards and
	// advantage terms per completion token (nil without TokenCredit).
	TokenRewards []float64 `json:"-"` // NaN (unscored) has no JSON form
	TokenAdv     []float64 `json:"-"`

	PromptIDs []int32 `json:"-"`
	IDs       []int32 `json:"-"`
	// ToolMask, for a tool-calling trajectory (SetTools), has one entry per
	// IDs token: 1 for a token the model generated, 0 for one a tool or the
	// chat template inserted. Nil means every token is the model's.
	ToolMask []int32 `json:"-"`
}

// modelTokens is the number of completion tokens the model generated.
func (r *row) modelTokens() int {
	if r.ToolMask == nil {
		return len(r.IDs)
	}
	n := 0
	for _, m := range r.ToolMask {
		n += int(m)
	}
	return n
}

// scores are a row's rewards; one that did not apply (a NaN) is null in
// JSON.
type scores []float64

// MarshalJSON writes the scores with null for NaN.
func (s scores) MarshalJSON() ([]byte, error) {
	out := make([]*float64, len(s))
	for i := range s {
		if !math.IsNaN(s[i]) {
			out[i] = &s[i]
		}
	}
	return json.Marshal(out)
}

// microBatch holds the host tensors of one forward/backward pass. Shapes:
// Tokens and Mask [B, P+C], LossMask, Weights, Old and Ref [B, C], Adv [B]
// ([B, C] when TokenAdv, see TokenCredit).
type microBatch struct {
	B, P, C  int
	Rows     int // real rows; the rest is padding
	Tokens   []int32
	Mask     []int32
	LossMask []float32
	Weights  []float32
	Adv      []float32
	TokenAdv bool      // Adv is per token
	EntScale float32   // loss.EntropyBonus's scale (see loss.EntropyScale)
	Old, Ref []float32 // nil unless needed
	// ToolMask [B, C] is 1 for the tokens the model generated and 0 for
	// the ones tools inserted, when some row is a tool-calling trajectory;
	// nil otherwise. LossMask is already 0 at the inserted tokens; a
	// constraint restarts its prefix at each model turn (allowedInputs).
	ToolMask []int32
	// Group, when above 1, says that the rows are groups of Group
	// consecutive rows with the same prompt (sharedGroup): the graphs
	// compute each group's prompt once (Config.SharePrompts).
	Group int
}

// sharedGroup returns g when the rows, laid out as a micro-batch of
// batchRows rows, are whole groups of g consecutive rows with equal prompt
// tokens (the padding rows then form whole groups too), else 0.
func sharedGroup(rows []*row, g, batchRows int) int {
	if g < 2 || len(rows)%g != 0 || batchRows%g != 0 {
		return 0
	}
	for i, r := range rows {
		if !slices.Equal(r.PromptIDs, rows[i-i%g].PromptIDs) {
			return 0
		}
	}
	return g
}

// withGroup appends the group marker to a micro-batch's graph inputs when
// its rows share their prompts: an int8 [Group] tensor whose length is all
// a graph reads (groupOf), so that the two layouts compile apart.
func (mb *microBatch) withGroup(in []any) []any {
	if mb.Group < 2 {
		return in
	}
	return append(in, tensors.FromShape(shapes.Make(dtypes.Int8, mb.Group)))
}

// microInputs is the number of training-graph inputs before the optional
// ones (see microBatch.inputs); microEntScale is the entropy-bonus scale's.
const (
	microInputs   = 6
	microEntScale = 5
)

// bucket rounds a length up to its graph shape (pad.Bucket).
func bucket(n, limit int) int { return pad.Bucket(n, limit) }

// packRows lays rows out as a micro-batch of batchRows rows (the rest is
// padding with zero masks): prompts left-padded to a bucketed P, completions
// right-padded to a bucketed C. maskTruncated zeroes the loss mask of
// truncated completions.
func packRows(rows []*row, batchRows, maxPrompt, maxCompletion int, maskTruncated bool) *microBatch {
	p, c := 1, 1
	for _, r := range rows {
		p, c = max(p, len(r.PromptIDs)), max(c, len(r.IDs))
	}
	return packRowsShape(rows, batchRows, bucket(p, maxPrompt), bucket(c, maxCompletion), maskTruncated)
}

// packRowsShape is packRows with the padded sizes p and c given.
func packRowsShape(rows []*row, batchRows, p, c int, maskTruncated bool) *microBatch {
	l := p + c
	mb := &microBatch{
		B: batchRows, P: p, C: c, Rows: len(rows),
		Tokens:   make([]int32, batchRows*l),
		Mask:     make([]int32, batchRows*l),
		LossMask: make([]float32, batchRows*c),
		Adv:      make([]float32, batchRows),
	}
	for b, r := range rows {
		off := b*l + p - len(r.PromptIDs)
		copy(mb.Tokens[off:], r.PromptIDs)
		for i := range r.PromptIDs {
			mb.Mask[off+i] = 1
		}
		copy(mb.Tokens[b*l+p:], r.IDs)
		useLoss := !r.Dropped && !(maskTruncated && r.Truncated)
		if r.ToolMask != nil && mb.ToolMask == nil {
			mb.ToolMask = make([]int32, batchRows*c)
			for i := range mb.ToolMask {
				mb.ToolMask[i] = 1
			}
		}
		for i := range r.IDs {
			mb.Mask[b*l+p+i] = 1
			// Inserted tokens (tool results, template markers) are context
			// only: no loss, KL or entropy, and no count in a normalizer.
			model := r.ToolMask == nil || r.ToolMask[i] != 0
			if useLoss && model {
				mb.LossMask[b*c+i] = 1
			}
			if !model {
				mb.ToolMask[b*c+i] = 0
			}
		}
		mb.Adv[b] = float32(r.Advantage)
	}
	return mb
}

// lossMaskRows returns the loss mask as rows.
func (mb *microBatch) lossMaskRows() [][]float32 {
	out := make([][]float32, mb.B)
	for b := range out {
		out[b] = mb.LossMask[b*mb.C : (b+1)*mb.C]
	}
	return out
}

// tokens returns the loss-mask count.
func (mb *microBatch) tokens() int {
	n := 0
	for _, v := range mb.LossMask {
		if v != 0 {
			n++
		}
	}
	return n
}

// setWeights fills Weights and EntScale for lossType with step-wide
// normalizers.
func (mb *microBatch) setWeights(lossType loss.Type, n loss.StepNormalizers) {
	mb.EntScale = loss.EntropyScale(lossType, n)
	w := loss.TokenWeights(mb.lossMaskRows(), lossType, n)
	mb.Weights = make([]float32, 0, mb.B*mb.C)
	for _, r := range w {
		mb.Weights = append(mb.Weights, r...)
	}
}

// inputs returns the graph inputs of the training graph: tokens, mask,
// loss mask, weights, advantages, the entropy-bonus scale, then old (when
// withOld) and ref (when withRef).
func (mb *microBatch) inputs(withOld, withRef bool) []any {
	l := mb.P + mb.C
	advDims := []int{mb.B}
	if mb.TokenAdv {
		advDims = append(advDims, mb.C)
	}
	in := []any{
		tensors.FromFlatDataAndDimensions(mb.Tokens, mb.B, l),
		tensors.FromFlatDataAndDimensions(mb.Mask, mb.B, l),
		tensors.FromFlatDataAndDimensions(mb.LossMask, mb.B, mb.C),
		tensors.FromFlatDataAndDimensions(mb.Weights, mb.B, mb.C),
		tensors.FromFlatDataAndDimensions(mb.Adv, advDims...),
		tensors.FromScalar(mb.EntScale),
	}
	if withOld {
		in = append(in, tensors.FromFlatDataAndDimensions(mb.Old, mb.B, mb.C))
	}
	if withRef {
		in = append(in, tensors.FromFlatDataAndDimensions(mb.Ref, mb.B, mb.C))
	}
	return in
}

// logitsInputs returns tokens and mask only (for old/ref log-probs).
func (mb *microBatch) logitsInputs() []any {
	l := mb.P + mb.C
	return []any{
		tensors.FromFlatDataAndDimensions(mb.Tokens, mb.B, l),
		tensors.FromFlatDataAndDimensions(mb.Mask, mb.B, l),
		tensors.FromFlatDataAndDimensions(mb.LossMask, mb.B, mb.C),
	}
}
