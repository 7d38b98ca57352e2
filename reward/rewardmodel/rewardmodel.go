// Package rewardmodel scores completions with a reward model: a Hugging
// Face sequence-classification checkpoint (LlamaForSequenceClassification,
// Qwen2ForSequenceClassification, Qwen3ForSequenceClassification,
// Gemma3TextForSequenceClassification), that is a decoder of a family the
// model package supports with a linear score head of one label in place of
// the LM head. It is what TRL's GRPOTrainer does with a model among its
// reward_funcs.
//
// A Model is a reward.Scorer and a reward.BatchScorer: an Evaluator hands
// it a whole batch, which runs as one forward pass (or a few, of
// Options.BatchSize rows), on the backend the model package picks (the
// process's shared one for its configuration, so the policy's) or
// Options.Backend. The weights are frozen; they may be held in bf16, NF4
// or int8 (Options.Storage) and computed in bf16 (Options.Compute).
//
// Each sample becomes one text, as TRL builds it: a conversational sample
// (reward.Sample.Messages set) is the messages followed by the completion
// as the assistant's turn, rendered with the reward model's own chat
// template (no generation prompt); a plain one is Prompt + Completion.
// The text is tokenized with the reward model's own tokenizer, without
// adding special tokens, and right-padded with its pad token (its EOS
// when it has none). The score is the score head's output at the
// rightmost token that is not the pad token, as transformers pools it
// (the pad token inside a text is attended but never pooled; a text made
// only of pad tokens is pooled at its first token).
package rewardmodel

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/grpokit/grpokit/internal/regfile"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/tokenizer"
)

// DefaultBatchSize is the number of rows a forward pass scores when
// Options.BatchSize is 0.
const DefaultBatchSize = 8

// Options configure Load. A nil *Options means defaults.
type Options struct {
	// Backend runs the forward passes; nil lets the model package pick
	// (backend.ResolveFor: the same shared backend as a policy loaded
	// without one, for the same configuration).
	Backend backends.Backend
	// Compute is the dtype of the forward pass: Float32 (the zero value)
	// or BFloat16 (see model.Options.Compute).
	Compute dtypes.DType
	// Storage is how the weights are held (model.Storage: "" keeps
	// float32; StorageAsStored, StorageBF16, StorageNF4, StorageInt8).
	// The score head stays float32 (one row).
	Storage model.Storage
	// DoubleQuant quantizes NF4's absmax again (model.Options.DoubleQuant).
	DoubleQuant bool
	// BatchSize bounds the rows of one forward pass; 0 means
	// DefaultBatchSize.
	BatchSize int
	// ChatTemplateKwargs are extra variables of the chat template (as
	// TRL's chat_template_kwargs), e.g. {"enable_thinking": false}.
	ChatTemplateKwargs map[string]any
	// Logger receives Load's informational lines; nil means slog.Default().
	Logger *slog.Logger
}

// Families are the model types a reward model may have.
var families = []string{"llama", "qwen2", "qwen3", "gemma3_text"}

// Model is a loaded reward model. It is safe for concurrent use: forward
// passes run one at a time.
type Model struct {
	dir       string
	m         *model.Model
	tok       *tokenizer.Pretrained
	score     *tensors.Tensor // [1, hidden] float32
	pad       int
	batch     int
	chatVars  map[string]any
	heldBytes int64

	mu   sync.Mutex
	exec *mlctx.Exec
}

var (
	_ reward.Scorer      = (*Model)(nil)
	_ reward.BatchScorer = (*Model)(nil)
)

// seqCls is what Load reads from config.json beside model.Config.
type seqCls struct {
	Architectures []string          `json:"architectures"`
	ModelType     string            `json:"model_type"`
	NumLabels     *int              `json:"num_labels"`
	ID2Label      map[string]string `json:"id2label"`
}

// Load reads the reward model in dir: config.json (a
// …ForSequenceClassification architecture with one label), the decoder's
// weights and score.weight [1, hidden] from the safetensors, and the
// tokenizer (tokenizer.json, tokenizer_config.json with its chat
// template). Every problem is an error naming the file and the value.
func Load(dir string, opts *Options) (*Model, error) {
	if opts == nil {
		opts = &Options{}
	}
	if opts.BatchSize < 0 {
		return nil, fmt.Errorf("rewardmodel: batch size %d, want ≥ 0", opts.BatchSize)
	}
	cfgPath := filepath.Join(dir, "config.json")
	raw, err := regfile.ReadFile(cfgPath, regfile.MaxMeta)
	if err != nil {
		return nil, fmt.Errorf("rewardmodel: %w", err)
	}
	var sc seqCls
	if err := json.Unmarshal(raw, &sc); err != nil {
		return nil, fmt.Errorf("rewardmodel: %s: %w", cfgPath, err)
	}
	if !slices.Contains(families, sc.ModelType) {
		return nil, fmt.Errorf("rewardmodel: %s: model_type %q: a reward model must be one of %s", cfgPath, sc.ModelType, strings.Join(families, ", "))
	}
	for _, a := range sc.Architectures {
		if !strings.HasSuffix(a, "ForSequenceClassification") {
			return nil, fmt.Errorf("rewardmodel: %s: architecture %q is not a reward model: want a …ForSequenceClassification checkpoint (a decoder with a score head)", cfgPath, a)
		}
	}
	labels := -1
	switch {
	case sc.NumLabels != nil:
		labels = *sc.NumLabels
	case sc.ID2Label != nil:
		labels = len(sc.ID2Label)
	}
	if labels != -1 && labels != 1 {
		return nil, fmt.Errorf("rewardmodel: %s: num_labels %d: a reward model has one label (its score)", cfgPath, labels)
	}
	m, err := model.Load(dir, &model.Options{Backend: opts.Backend, Compute: opts.Compute, Storage: opts.Storage,
		DoubleQuant: opts.DoubleQuant, DecoderOnly: true, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("rewardmodel: %w", err)
	}
	m.SetBaseTrainable(false)
	w, shape, err := model.ReadTensor(dir, "score.weight")
	if err != nil {
		return nil, fmt.Errorf("rewardmodel: %s: the score head: %w", dir, err)
	}
	if h := m.Config().HiddenSize; len(shape) != 2 || shape[1] != h || shape[0] != 1 {
		return nil, fmt.Errorf("rewardmodel: %s: score.weight has shape %v, want [1 %d] (one label over hidden_size %d)", dir, shape, h, h)
	}
	if _, _, err := model.ReadTensor(dir, "score.bias"); err == nil {
		return nil, fmt.Errorf("rewardmodel: %s: score.bias: transformers' score head has no bias", dir)
	}
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("rewardmodel: %w", err)
	}
	if v := m.Config().VocabSize; tok.PAD < 0 || tok.PAD >= v {
		return nil, fmt.Errorf("rewardmodel: %s: pad token id %d outside the vocabulary (%d)", dir, tok.PAD, v)
	}
	rm := &Model{dir: dir, m: m, tok: tok, pad: tok.PAD, batch: cmp.Or(opts.BatchSize, DefaultBatchSize),
		score: tensors.FromFlatDataAndDimensions(w, 1, len(w)), chatVars: opts.ChatTemplateKwargs}
	for v := range m.Context().IterVariables() {
		rm.heldBytes += int64(v.Shape().Memory())
	}
	rm.heldBytes += int64(4 * len(w))
	return rm, nil
}

// Dir returns the folder the model was loaded from.
func (m *Model) Dir() string { return m.dir }

// Config returns the decoder's configuration.
func (m *Model) Config() model.Config { return m.m.Config() }

// PadID returns the pad token id: right padding, and the token pooling
// skips.
func (m *Model) PadID() int { return m.pad }

// HeldBytes returns the memory the weights take as held (the decoder's
// variables and the score head), for a memory plan.
func (m *Model) HeldBytes() int64 { return m.heldBytes }

// MemoryBytes estimates what scoring batches of rows texts of up to
// tokens tokens each takes: the weights as held, and the transient memory
// of one forward pass (ForwardBytes with Options.BatchSize), for a run's
// memory plan.
func (m *Model) MemoryBytes(rows, tokens int) (weights, forward int64) {
	return m.heldBytes, ForwardBytes(m.m.Config(), m.batch, rows, tokens)
}

// ForwardBytes estimates the transient memory of scoring rows texts of up
// to tokens tokens each with a reward model of config c, batchSize rows a
// forward pass (0: DefaultBatchSize): no backward pass, so one layer's
// intermediates at a time beside the residual stream, and the attention
// scores.
func ForwardBytes(c model.Config, batchSize, rows, tokens int) int64 {
	B, T := int64(min(max(rows, 0), cmp.Or(batchSize, DefaultBatchSize))), int64(bucket(max(tokens, 1)))
	H, I := int64(c.HiddenSize), int64(c.IntermediateSize)
	qkv := int64(c.NumAttentionHeads+2*c.NumKeyValueHeads) * int64(c.HeadDim)
	scores := 2 * int64(c.NumAttentionHeads) * T // scores and probabilities
	perToken := 4*H + 3*I + qkv + scores         // residual, norm, attention output; gate, up, product; q, k, v
	return B * T * perToken * 4
}

// HeldBytes estimates the bytes the weights of a reward model of config c
// take held as storage from a checkpoint of file dtype fileDType (as
// safetensors names it): the decoder (model.Config.HeldBytes, without an
// LM head) and the float32 score head, without loading it.
func HeldBytes(c model.Config, storage model.Storage, fileDType string, doubleQuant bool) int64 {
	c.TieWordEmbeddings = true // a sequence classifier has no lm_head
	return c.HeldBytes(storage, fileDType, doubleQuant) + 4*int64(c.HiddenSize)
}

// Tokenizer returns the reward model's own tokenizer.
func (m *Model) Tokenizer() *tokenizer.Pretrained { return m.tok }

// Text returns the text the model scores for s: its messages and the
// completion as the assistant's turn through the chat template, or
// Prompt + Completion for a plain prompt.
func (m *Model) Text(s reward.Sample) (string, error) {
	if len(s.Messages) == 0 {
		return s.Prompt + s.Completion, nil
	}
	msgs := make([]tokenizer.Message, 0, len(s.Messages)+1)
	for _, x := range s.Messages {
		msgs = append(msgs, tokenizer.Message{Role: x.Role, Content: x.Content})
	}
	msgs = append(msgs, tokenizer.Message{Role: "assistant", Content: s.Completion})
	text, err := m.tok.ApplyChat(msgs, tokenizer.ChatOptions{Vars: m.chatVars})
	if err != nil {
		return "", fmt.Errorf("rewardmodel: %s: chat template: %w", m.dir, err)
	}
	return text, nil
}

// Score scores one sample (Score of a batch of one); NaN when it cannot
// (an Evaluator counts that as a failure).
func (m *Model) Score(s reward.Sample) float64 {
	v, err := m.ScoreBatch(context.Background(), []reward.Sample{s})
	if err != nil {
		return math.NaN()
	}
	return v[0]
}

// ScoreBatch scores every sample (see the package doc for the text each
// becomes). A sample whose text has no token scores NaN.
func (m *Model) ScoreBatch(ctx context.Context, samples []reward.Sample) ([]float64, error) {
	rows := make([][]int, len(samples))
	for i, s := range samples {
		text, err := m.Text(s)
		if err != nil {
			return nil, err
		}
		rows[i] = m.tok.Tokenizer.Encode(text, false)
	}
	return m.ScoreIDs(ctx, rows)
}

// ScoreIDs scores rows of token ids (each a whole text, no padding):
// the score head at the rightmost token of each row that is not the pad
// token. An empty row scores NaN.
func (m *Model) ScoreIDs(ctx context.Context, rows [][]int) (scores []float64, err error) {
	vocab := m.m.Config().VocabSize
	for i, r := range rows {
		for _, id := range r {
			if id < 0 || id >= vocab {
				return nil, fmt.Errorf("rewardmodel: row %d: token id %d outside the vocabulary (%d)", i, id, vocab)
			}
		}
	}
	scores = make([]float64, len(rows))
	for lo := 0; lo < len(rows); lo += m.batch {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("rewardmodel: %w", context.Cause(ctx))
		}
		hi := min(lo+m.batch, len(rows))
		if err := m.scoreChunk(rows[lo:hi], scores[lo:hi]); err != nil {
			return nil, err
		}
	}
	return scores, nil
}

// bucket rounds a row length up so that few shapes get compiled.
func bucket(n int) int {
	b := 16
	for b < n {
		b += b / 2
	}
	return b
}

// pooled returns transformers' pooled position of a right-padded row:
// argmax over t of t·(ids[t] ≠ pad), the first maximum (0 when every
// token is pad).
func pooled(ids []int, pad int) int {
	best := 0
	for t, id := range ids {
		if id != pad && t > best {
			best = t
		}
	}
	return best
}

// scoreChunk runs one forward pass over rows and writes their scores.
func (m *Model) scoreChunk(rows [][]int, out []float64) (err error) {
	T := 1
	for _, r := range rows {
		T = max(T, len(r))
	}
	T = bucket(T)
	b := model.Batch{IDs: make([][]int, len(rows)), Mask: make([][]int, len(rows))}
	for i, r := range rows {
		b.IDs[i], b.Mask[i] = make([]int, T), make([]int, T)
		for t := range T {
			if t < len(r) {
				b.IDs[i][t], b.Mask[i][t] = r[t], 1
			} else {
				b.IDs[i][t] = m.pad
			}
		}
	}
	b.Positions = model.Positions(b.Mask)
	flat := func(x [][]int) *tensors.Tensor {
		v := make([]int32, 0, len(x)*T)
		for _, r := range x {
			for _, e := range r {
				v = append(v, int32(e))
			}
		}
		return tensors.FromFlatDataAndDimensions(v, len(x), T)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rewardmodel: %s: forward: %v", m.dir, r)
		}
	}()
	if m.exec == nil {
		e, err := mlctx.NewExecAny(m.m.Backend(), m.m.Context(), m.graph)
		if err != nil {
			return fmt.Errorf("rewardmodel: %w", err)
		}
		e.SetMaxCache(256)
		m.exec = e
	}
	res, err := m.exec.Exec(flat(b.IDs), flat(b.Mask), flat(b.Positions), m.score)
	if err != nil {
		return fmt.Errorf("rewardmodel: %s: forward: %w", m.dir, err)
	}
	s := tensors.MustCopyFlatData[float32](res[0])
	for i, r := range rows {
		if len(r) == 0 {
			out[i] = math.NaN()
			continue
		}
		out[i] = float64(s[i*T+pooled(b.IDs[i], m.pad)])
	}
	return nil
}

// graph is the scoring forward: hidden states after the final norm
// [B, T, H], the score head at every position in the compute dtype (as
// transformers' score Linear), then float32 [B, T].
func (m *Model) graph(ctx *mlctx.Context, ids, mask, pos, w *Node) *Node {
	T := ids.Shape().Dim(1)
	h := m.m.HiddenRangeGraph(ctx, false, ids, mask, pos, 0, T, false)
	s := DotGeneral(h, []int{2}, nil, ConvertDType(w, h.DType()), []int{1}, nil) // [B, T, 1]
	return Reshape(ConvertDType(s, dtypes.Float32), ids.Shape().Dim(0), T)
}
