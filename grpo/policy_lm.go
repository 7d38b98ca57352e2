package grpo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/tokenizer"
)

// ReferenceContexter is an optional interface of a Policy whose reference
// model lives in a context of its own (full fine-tuning keeps a frozen
// copy of the weights there). The trainer calls ReferenceContext once, in
// NewTrainer and only when Beta ≠ 0, and builds the reference log-probs
// graph on that context, calling Logits with Reference set.
type ReferenceContexter interface {
	ReferenceContext() (*mlctx.Context, error)
}

// LMPolicy is the standard Policy: a model.Model, trained through a LoRA
// adapter (lora.Attach or lora.Load) or fully, with a tokenizer that turns
// examples into tokens. Its reference model is the base model without the
// adapter (no second copy of the weights) or, for full fine-tuning, a
// frozen copy of the weights made when a Trainer with Beta ≠ 0 asks for it
// (with Beta 0, TRL's default, no copy is ever made).
type LMPolicy struct {
	model   *model.Model
	adapter *lora.Adapter // nil: full fine-tuning
	tok     *tokenizer.Pretrained
	opts    LMPolicyOptions
	ref     *model.Model // full fine-tuning's frozen copy; nil with an adapter
	// syncExec mixes the policy's weights into ref (SyncReference), made
	// on first use.
	syncExec *mlctx.Exec
}

var (
	_ Policy             = (*LMPolicy)(nil)
	_ Saver              = (*LMPolicy)(nil)
	_ ReferenceContexter = (*LMPolicy)(nil)
	_ Constrained        = (*LMPolicy)(nil)
	_ HeadPolicy         = (*LMPolicy)(nil)
)

// LMPolicyOptions configure an LMPolicy. The zero value means defaults.
type LMPolicyOptions struct {
	// Constraint restricts every generated token (constrained decoding),
	// e.g. model.NewTrie over the allowed answers. nil allows any token.
	Constraint model.Constraint
	// NoSpecialTokens encodes plain-text prompts without the tokenizer's
	// post-processor (no BOS). Chat prompts always render their template.
	NoSpecialTokens bool
	// ChatOptions are passed to the chat template; AddGenerationPrompt is
	// always set.
	ChatOptions tokenizer.ChatOptions
	// TemplatePlainPrompts renders a plain-text prompt (Example.Prompt) as
	// one user message through the chat template, as chat prompts are. By
	// default, as in TRL's "standard" dataset format, a plain prompt goes
	// to the model as it is, without the template (and without
	// ChatOptions). A grpokit extension.
	TemplatePlainPrompts bool
	// PlainPrompts says that the policy is trained on plain-text prompts
	// sent without the chat template: Save records it
	// (model.SavePlainPrompts), so that an exported model is run the same
	// way (gguf's Modelfile then sends the prompt as it is). grpokit train
	// sets it when every training prompt is plain text and
	// TemplatePlainPrompts is off.
	PlainPrompts bool
	// NoReference forbids the frozen copy of full fine-tuning even when a
	// Trainer with Beta ≠ 0 asks for it (NewTrainer then fails). Without it
	// the copy is still only made for Beta ≠ 0.
	NoReference bool
	// Frozen makes a policy that only generates and scores (an evaluation,
	// a chat): with no adapter the model keeps its weights as they are
	// held (bf16, NF4, int8: half or less of float32's memory) and frozen,
	// instead of becoming the float32 masters of full fine-tuning.
	// NewTrainer refuses a frozen policy.
	Frozen bool
}

// NewLMPolicy returns the policy of m. With adapter non-nil (from
// lora.Attach or lora.Load on m) only the adapter trains; tok may be nil
// only for a policy that never generates (log-prob tests); with adapter nil
// every weight of m trains (m.SetBaseTrainable(true)); the frozen copy
// that serves as reference model is made only when a Trainer with Beta ≠ 0
// asks for it (ReferenceContext), from the weights m holds then. opts may
// be nil.
func NewLMPolicy(m *model.Model, adapter *lora.Adapter, tok *tokenizer.Pretrained, opts *LMPolicyOptions) (*LMPolicy, error) {
	if m == nil {
		return nil, errors.New("grpo: NewLMPolicy: nil model")
	}
	p := &LMPolicy{model: m, adapter: adapter, tok: tok}
	if opts != nil {
		p.opts = *opts
	}
	if adapter == nil && p.opts.Frozen {
		m.SetBaseTrainable(false)
	} else if adapter == nil {
		// Full fine-tuning trains float32 masters.
		switch st := m.Storage(); {
		case st.Quantized():
			return nil, fmt.Errorf("grpo: NewLMPolicy: full fine-tuning of a %s model; train a LoRA adapter (QLoRA) or load it in float32", st)
		case st != model.StorageF32:
			if err := m.SetStorage(model.StorageF32, false); err != nil {
				return nil, fmt.Errorf("grpo: NewLMPolicy: %w", err)
			}
		}
		m.SetBaseTrainable(true)
	}
	return p, nil
}

// referenceCopy returns a frozen copy of m's current weights, computing
// in m's dtype (TRL's reference model shares the policy's torch_dtype).
func referenceCopy(m *model.Model) (*model.Model, error) {
	ref, err := model.New(m.Config(), 0, &model.Options{Backend: m.Backend(), Compute: m.Compute()})
	if err != nil {
		return nil, fmt.Errorf("grpo: reference copy: %w", err)
	}
	for _, w := range m.Config().Weights() {
		data, shape, err := m.Weight(w.Name)
		if err != nil {
			return nil, fmt.Errorf("grpo: reference copy: %w", err)
		}
		if err := ref.SetWeight(w.Name, data, shape); err != nil {
			return nil, fmt.Errorf("grpo: reference copy: %w", err)
		}
	}
	ref.SetBaseTrainable(false)
	return ref, nil
}

// Constraint returns the constraint Generate samples under (nil for none),
// so the trainer masks the logits it trains the same way.
func (p *LMPolicy) Constraint() model.Constraint { return p.opts.Constraint }

// Model returns the policy's model.
func (p *LMPolicy) Model() *model.Model { return p.model }

// Tokenizer returns the policy's tokenizer (nil if it has none).
func (p *LMPolicy) Tokenizer() *tokenizer.Pretrained { return p.tok }

// ChatOptions returns the chat-template options prompts are rendered with.
func (p *LMPolicy) ChatOptions() tokenizer.ChatOptions { return p.opts.ChatOptions }

// Adapter returns the LoRA adapter, nil for full fine-tuning.
func (p *LMPolicy) Adapter() *lora.Adapter { return p.adapter }

// Context returns the model's context.
func (p *LMPolicy) Context() *mlctx.Context { return p.model.Context() }

// Backend returns the model's backend.
func (p *LMPolicy) Backend() backends.Backend { return p.model.Backend() }

// TrainableVariables returns the adapter's matrices, or every weight.
func (p *LMPolicy) TrainableVariables() []*mlctx.Variable { return p.model.TrainableVariables() }

// ReferenceContext returns the model's own context with an adapter (the
// reference is the same weights without it) and, for full fine-tuning, the
// context of a frozen copy of the weights, made on the first call (it
// doubles the weights' memory; NewTrainer calls this only for Beta ≠ 0).
// It is an error with LMPolicyOptions.NoReference.
func (p *LMPolicy) ReferenceContext() (*mlctx.Context, error) {
	if p.adapter != nil {
		return p.model.Context(), nil
	}
	if p.ref == nil {
		if p.opts.NoReference {
			return nil, errors.New("grpo: the policy was made with NoReference, but the reference model is needed (Beta ≠ 0)")
		}
		ref, err := referenceCopy(p.model)
		if err != nil {
			return nil, err
		}
		p.ref = ref
	}
	return p.ref.Context(), nil
}

// Save writes the PEFT adapter (adapter_config.json and
// adapter_model.safetensors) or, for full fine-tuning, the model in Hugging
// Face layout (config.json, model.safetensors) to dir, together with what
// it takes to run it alone: the tokenizer's files (tokenizer.json,
// tokenizer_config.json, generation_config.json; see
// tokenizer.Pretrained.WriteFiles) and, when the policy generates under a
// constraint, constraint.json (model.SaveConstraint), which
// model.LoadConstraint and grpokit generate apply again.
func (p *LMPolicy) Save(dir string) error {
	var err error
	if p.adapter != nil {
		err = p.adapter.Save(dir)
	} else {
		err = p.model.Save(dir)
	}
	if err != nil {
		return err
	}
	if p.tok != nil {
		if err := p.tok.WriteFiles(dir); err != nil {
			return fmt.Errorf("grpo: save: %w", err)
		}
	}
	if p.opts.PlainPrompts {
		if err := model.SavePlainPrompts(dir); err != nil {
			return fmt.Errorf("grpo: save: %w", err)
		}
	}
	return model.SaveConstraint(dir, p.opts.Constraint)
}

// PromptIDs returns the tokens of an example's prompt: its PromptIDs as
// they are, messages rendered with the chat template (generation prompt
// added), or plain text encoded with the special tokens (BOS) unless
// NoSpecialTokens (or, with TemplatePlainPrompts, rendered as one user
// message); then the last maxLen tokens when maxLen > 0. Only
// PromptIDs work without a tokenizer.
func (p *LMPolicy) PromptIDs(ex dataset.Example, maxLen int) ([]int, error) {
	return EncodePrompt(p.tok, ex, p.opts, maxLen)
}

// EncodePrompt is LMPolicy.PromptIDs for tokenizer tok and options opts,
// without a model: what a policy would feed the model (a memory plan
// measures prompts with it before any weight is loaded).
func EncodePrompt(tok *tokenizer.Pretrained, ex dataset.Example, opts LMPolicyOptions, maxLen int) ([]int, error) {
	var ids []int
	switch {
	case len(ex.PromptIDs) > 0:
		ids = slices.Clone(ex.PromptIDs)
	case tok == nil:
		return nil, errors.New("grpo: no tokenizer to encode the prompt (give it as PromptIDs)")
	case len(ex.Messages) > 0 || opts.TemplatePlainPrompts:
		msgs := make([]tokenizer.Message, len(ex.Messages))
		for i, m := range ex.Messages {
			msgs[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
		}
		if len(msgs) == 0 {
			msgs = []tokenizer.Message{{Role: "user", Content: ex.Prompt}}
		}
		chat := opts.ChatOptions
		chat.AddGenerationPrompt = true
		text, err := tok.ApplyChat(msgs, chat)
		if err != nil {
			return nil, fmt.Errorf("grpo: chat template: %w", err)
		}
		ids = tok.Tokenizer.Encode(text, false)
	default:
		ids = tok.Tokenizer.Encode(ex.Prompt, !opts.NoSpecialTokens)
	}
	if len(ids) == 0 {
		return nil, errors.New("grpo: prompt encodes to no tokens")
	}
	if maxLen > 0 && len(ids) > maxLen {
		ids = ids[len(ids)-maxLen:]
	}
	return ids, nil
}

// TargetIDs returns the tokens of text (no special tokens) followed by
// the first EOS id: a completion for supervised fine-tuning.
func (p *LMPolicy) TargetIDs(text string) ([]int, error) {
	if p.tok == nil {
		return nil, errors.New("grpo: LMPolicy has no tokenizer")
	}
	if len(p.tok.EOS) == 0 {
		return nil, errors.New("grpo: the tokenizer has no EOS token")
	}
	return append(p.tok.Tokenizer.Encode(text, false), p.tok.EOS[0]), nil
}

// Generate samples n completions per prompt with the model's KV-cache
// generator, stopping at the tokenizer's EOS ids (and the model config's).
// Without a tokenizer the prompts must carry PromptIDs, the model config's
// EOS ids stop, and every completion's Text is empty.
func (p *LMPolicy) Generate(ctx context.Context, prompts []dataset.Example, n int, opts GenerateOptions) ([]Completion, error) {
	ids := make([][]int, len(prompts))
	for i, ex := range prompts {
		var err error
		if ids[i], err = p.PromptIDs(ex, opts.MaxPromptLength); err != nil {
			return nil, fmt.Errorf("prompt %d: %w", i, err)
		}
	}
	cfg := model.GenerateConfig{
		MaxNewTokens:   opts.MaxCompletionLength,
		MinNewTokens:   opts.MinCompletionLength,
		NumGenerations: n,
		Sampling:       opts.Sampling,
		Seed:           opts.Seed,
		Constraint:     p.opts.Constraint,
	}
	if p.tok != nil {
		cfg.StopIDs, cfg.PadID = p.tok.EOS, p.tok.PAD
	}
	gen, err := p.model.Generate(ctx, ids, cfg)
	if err != nil {
		return nil, err
	}
	out := make([]Completion, len(gen))
	for i, c := range gen {
		text := c.Tokens
		if c.Stopped && len(text) > 0 {
			text = text[:len(text)-1]
		}
		out[i] = Completion{
			PromptIDs: toInt32(ids[i/n]),
			IDs:       toInt32(c.Tokens),
			Truncated: !c.Stopped,
		}
		if p.tok != nil {
			out[i].Text = p.tok.Tokenizer.Decode(text, true)
		}
	}
	return out, nil
}

// Logits runs the model over in.Tokens with positions 0…L−1 in every row
// (as TRL, which passes no position ids; RoPE is relative, so left padding
// does not matter) and returns the logits of positions P−1 … P+C−2, the
// ones that predict the completion: [B, C, V]. It is Head over Hidden; the
// trainer uses those two (HeadPolicy) to map the hidden states to logits a
// chunk at a time. Graph building; panics on error.
func (p *LMPolicy) Logits(ctx *mlctx.Context, in LogitsInputs) *graph.Node {
	return p.Head(ctx, p.Hidden(ctx, in), in.Reference)
}

// Hidden returns the hidden states after the final norm at positions
// P−1 … P+C−2 (model.HiddenRangeGraph): [B, C, H]; the decoder layers are
// recomputed in the backward pass with in.GradientCheckpointing (an error
// with LoRA dropout, whose random mask would differ the second time). With
// in.Group above 1 each group's prompt is computed once
// (model.GroupedHiddenGraph).
// Graph building; panics on error.
func (p *LMPolicy) Hidden(ctx *mlctx.Context, in LogitsInputs) *graph.Node {
	g := in.Tokens.Graph()
	b, l := in.Tokens.Shape().Dim(0), in.Tokens.Shape().Dim(1)
	pos := graph.Iota(g, shapes.Make(dtypes.Int32, b, l), 1)
	m, withAdapter := p.referenceModel(in.Reference)
	if in.GradientCheckpointing && withAdapter && p.adapter != nil && p.adapter.Config().Dropout > 0 {
		panic(errors.New("grpo: gradient checkpointing with LoRA dropout > 0: the recomputed layers would draw another dropout mask; set lora_dropout 0 or turn gradient_checkpointing off"))
	}
	// The logits that predict the completion tokens are those at positions
	// PromptLen-1 .. l-2; the LM head runs only there.
	if in.Group > 1 {
		return m.GroupedHiddenGraph(ctx, withAdapter, in.Tokens, in.Mask, pos, in.PromptLen, in.Group, in.GradientCheckpointing)
	}
	return m.HiddenRangeGraph(ctx, withAdapter, in.Tokens, in.Mask, pos, in.PromptLen-1, l-1, in.GradientCheckpointing)
}

// Head maps hidden states [B, n, H] to float32 logits [B, n, V] with the
// LM head of the policy (or, with reference set, of the reference model).
// Graph building; panics on error.
func (p *LMPolicy) Head(ctx *mlctx.Context, hidden *graph.Node, reference bool) *graph.Node {
	m, _ := p.referenceModel(reference)
	return m.HeadGraph(ctx, hidden)
}

// referenceModel returns the model that builds the policy's (reference
// false) or the reference model's graph, and whether it uses the adapter.
func (p *LMPolicy) referenceModel(reference bool) (*model.Model, bool) {
	if reference && p.ref != nil {
		return p.ref, true
	}
	return p.model, !reference
}

func toInt32(xs []int) []int32 {
	out := make([]int32, len(xs))
	for i, x := range xs {
		out[i] = int32(x)
	}
	return out
}
