package grpotest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builder
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/backend"
)

// Token ids every Policy vocabulary starts with.
const (
	PadID = 0 // padding
	EOSID = 1 // end of completion
	UnkID = 2 // a word not in the vocabulary
)

// Policy is a fake grpo.Policy for tests: a bigram language model over a
// small word vocabulary. The logits of the next token are row `current
// token` of a trainable [V, V] table, so it learns prompt-dependent answers
// ("say cat" → "cat") in a few dozen steps, runs in milliseconds, and its
// reference model is a copy of the initial table in a context of its own
// (a grpo.ReferenceSyncer: Config.SyncRefModel updates it).
//
// Text is words separated by spaces: Encode splits on spaces, Decode joins.
// Set Script to make Generate return fixed texts instead of sampling (the
// log-probs still come from the table, so training runs on them).
type Policy struct {
	// Script, when set, gives completion j of prompt p instead of
	// sampling. Its text is encoded word by word and ends with EOS unless
	// it has more than MaxCompletionLength words.
	Script func(p dataset.Example, j int) string
	// Calls counts Generate calls.
	Calls int

	vocab   []string
	ids     map[string]int32
	backend backends.Backend
	ctx     *mlctx.Context
	table   *mlctx.Variable
	refCtx  *mlctx.Context // holds ref
	ref     *mlctx.Variable
}

var (
	_ grpo.Policy          = (*Policy)(nil)
	_ grpo.ReferenceSyncer = (*Policy)(nil)
)

// NewPolicy returns a Policy over words (ids 3, 4, …; ids 0–2 are pad, EOS
// and unknown) with its table drawn from N(0, std²) by seed, on the default
// backend.
func NewPolicy(words []string, std float64, seed uint64) (*Policy, error) {
	if len(words) == 0 {
		return nil, errors.New("grpotest: NewPolicy: no words")
	}
	b, err := backend.New("")
	if err != nil {
		return nil, fmt.Errorf("grpotest: %w", err)
	}
	p := &Policy{
		vocab:   append([]string{"<pad>", "<eos>", "<unk>"}, words...),
		ids:     map[string]int32{},
		backend: b,
		ctx:     mlctx.New(),
		refCtx:  mlctx.New(),
	}
	for i, w := range p.vocab {
		p.ids[w] = int32(i)
	}
	v := len(p.vocab)
	r := rand.New(rand.NewPCG(seed, 1))
	init := make([]float32, v*v)
	for i := range init {
		init[i] = float32(r.NormFloat64() * std)
	}
	p.table = p.ctx.In("bigram").VariableWithValue("table", tensors.FromFlatDataAndDimensions(init, v, v))
	p.ref = p.refCtx.In("bigram_ref").VariableWithValue("table", tensors.FromFlatDataAndDimensions(slices.Clone(init), v, v)).SetTrainable(false)
	return p, nil
}

// ReferenceContext returns the context of the reference table.
func (p *Policy) ReferenceContext() (*mlctx.Context, error) { return p.refCtx, nil }

// SyncReference sets the reference table to α·table + (1 − α)·reference,
// in float32: the reference times 1 − α, then plus α times the table, each
// rounded (TRL's order).
func (p *Policy) SyncReference(alpha float64) error {
	if !(alpha >= 0 && alpha <= 1) {
		return fmt.Errorf("grpotest: SyncReference: alpha %v is not in [0, 1]", alpha)
	}
	table := p.Table()
	ref := tensors.MustCopyFlatData[float32](p.ref.MustValue())
	a, keep := float32(alpha), float32(1-alpha)
	for i, r := range ref {
		kept := float32(r * keep) // conversions round each product: no fused multiply-add
		ref[i] = kept + float32(a*table[i])
	}
	v := len(p.vocab)
	return p.ref.SetValue(tensors.FromFlatDataAndDimensions(ref, v, v))
}

// Reference returns a copy of the current reference table, row-major
// [V, V].
func (p *Policy) Reference() []float32 {
	return tensors.MustCopyFlatData[float32](p.ref.MustValue())
}

// Vocab returns the vocabulary, ids 0–2 included.
func (p *Policy) Vocab() []string { return slices.Clone(p.vocab) }

// Encode returns the ids of text's space-separated words.
func (p *Policy) Encode(text string) []int32 {
	var out []int32
	for _, w := range strings.Fields(text) {
		id, ok := p.ids[w]
		if !ok {
			id = UnkID
		}
		out = append(out, id)
	}
	return out
}

// Decode joins the words of ids, stopping at EOS.
func (p *Policy) Decode(ids []int32) string {
	var words []string
	for _, id := range ids {
		if id == EOSID {
			break
		}
		if id >= 0 && int(id) < len(p.vocab) {
			words = append(words, p.vocab[id])
		}
	}
	return strings.Join(words, " ")
}

// Context returns the context holding the table.
func (p *Policy) Context() *mlctx.Context { return p.ctx }

// Backend returns the backend.
func (p *Policy) Backend() backends.Backend { return p.backend }

// TrainableVariables returns the bigram table.
func (p *Policy) TrainableVariables() []*mlctx.Variable { return []*mlctx.Variable{p.table} }

// Table returns a copy of the current table, row-major [V, V].
func (p *Policy) Table() []float32 {
	return tensors.MustCopyFlatData[float32](p.table.MustValue())
}

// promptIDs renders an example: the plain prompt, or the messages'
// contents joined, then truncated on the left.
func (p *Policy) promptIDs(ex dataset.Example, maxLen int) []int32 {
	text := ex.Prompt
	if len(ex.Messages) > 0 {
		parts := make([]string, len(ex.Messages))
		for i, m := range ex.Messages {
			parts[i] = m.Content
		}
		text = strings.Join(parts, " ")
	}
	ids := p.Encode(text)
	if len(ids) == 0 {
		ids = []int32{UnkID}
	}
	if maxLen > 0 && len(ids) > maxLen {
		ids = ids[len(ids)-maxLen:]
	}
	return ids
}

// Generate samples n completions per prompt from the table (or returns the
// Script's), with temperature and top-k (Temperature 0 decodes greedily,
// as grpo.Evaluate asks); the same seed gives the same completions.
func (p *Policy) Generate(ctx context.Context, prompts []dataset.Example, n int, opts grpo.GenerateOptions) ([]grpo.Completion, error) {
	p.Calls++
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if opts.MaxCompletionLength < 1 || !(opts.Temperature >= 0) {
		return nil, fmt.Errorf("grpotest: bad GenerateOptions %+v", opts)
	}
	table := p.Table()
	v := len(p.vocab)
	out := make([]grpo.Completion, 0, len(prompts)*n)
	for i, ex := range prompts {
		prompt := p.promptIDs(ex, opts.MaxPromptLength)
		for j := 0; j < n; j++ {
			c := grpo.Completion{PromptIDs: prompt}
			if p.Script != nil {
				ids := p.Encode(p.Script(ex, j))
				if len(ids) >= opts.MaxCompletionLength {
					c.IDs, c.Truncated = ids[:opts.MaxCompletionLength], true
				} else {
					c.IDs = append(ids, EOSID)
				}
			} else {
				r := rand.New(rand.NewPCG(opts.Seed, uint64(i*n+j)))
				cur := prompt[len(prompt)-1]
				c.Truncated = true
				for len(c.IDs) < opts.MaxCompletionLength {
					cur = sample(r, table[int(cur)*v:(int(cur)+1)*v], opts.Temperature, opts.TopK)
					c.IDs = append(c.IDs, cur)
					if cur == EOSID {
						c.Truncated = false
						break
					}
				}
			}
			c.Text = p.Decode(c.IDs)
			out = append(out, c)
		}
	}
	return out, nil
}

// sample draws from softmax(logits/temperature), restricted to the top k
// when k > 0, never choosing padding.
func sample(r *rand.Rand, logits []float32, temperature float64, k int) int32 {
	if temperature == 0 { // greedy: the most likely token
		temperature, k = 1, 1
	}
	idx := make([]int, 0, len(logits))
	for i := 1; i < len(logits); i++ {
		idx = append(idx, i)
	}
	if k > 0 && k < len(idx) {
		slices.SortStableFunc(idx, func(a, b int) int {
			switch {
			case logits[a] > logits[b]:
				return -1
			case logits[a] < logits[b]:
				return 1
			}
			return 0
		})
		idx = idx[:k]
	}
	top := math.Inf(-1)
	for _, i := range idx {
		top = max(top, float64(logits[i])/temperature)
	}
	w := make([]float64, len(idx))
	var sum float64
	for n, i := range idx {
		w[n] = math.Exp(float64(logits[i])/temperature - top)
		sum += w[n]
	}
	u := r.Float64() * sum
	for n, i := range idx {
		u -= w[n]
		if u <= 0 {
			return int32(i)
		}
	}
	return int32(idx[len(idx)-1])
}

// Logits builds [B, C, V] logits: row tokens[b, P−1+c] of the table (of the
// reference table for the reference). Graph building; panics on error.
func (p *Policy) Logits(ctx *mlctx.Context, in grpo.LogitsInputs) *graph.Node {
	g := in.Tokens.Graph()
	l := in.Tokens.Shape().Dim(1)
	prev := Slice(in.Tokens, AxisRange(), AxisRange(in.PromptLen-1, l-1)) // [B, C]
	v := len(p.vocab)
	table := p.table
	if in.Reference {
		table = p.ref
	}
	oneHot := OneHot(prev, v, dtypes.Float32) // [B, C, V]
	return Einsum("bcv,vw->bcw", oneHot, table.ValueGraph(g))
}
