package grpo

import (
	"context"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/model"
)

// Policy is the language model being trained. LMPolicy (model, optional
// LoRA adapter, tokenizer) is the standard implementation; grpotest.Policy is a scripted
// fake for tests. A Policy is used from one goroutine at a time.
//
// The trainer differentiates the graph that Logits builds with respect to
// the policy's trainable variables, so Logits must read the very variables
// TrainableVariables returns (through Context).
type Policy interface {
	// Generate samples n completions for each prompt and returns them in
	// group order: completion j of prompt i at index i·n+j. Prompts longer
	// than opts.MaxPromptLength tokens keep their last tokens. The same
	// prompts, weights and opts.Seed must give the same completions.
	Generate(ctx context.Context, prompts []dataset.Example, n int, opts GenerateOptions) ([]Completion, error)

	// Logits builds the logits that predict the completion tokens:
	// for in.Tokens [B, P+C], the logits at positions P−1 … P+C−2,
	// shaped [B, C, V] (float32). With in.Reference set it builds the
	// reference model instead: the base model without adapters (LoRA), or a
	// frozen copy of the initial weights (full fine-tuning; see
	// ReferenceSyncer for Config.SyncRefModel). This is a graph building
	// function and panics on error.
	Logits(ctx *mlctx.Context, in LogitsInputs) *graph.Node

	// Context returns the GoMLX context that holds the policy's variables.
	// The trainer adds its optimizer state to it.
	Context() *mlctx.Context

	// Backend returns the backend the policy's graphs run on.
	Backend() backends.Backend

	// TrainableVariables returns the variables training updates (LoRA
	// matrices, or every weight for full fine-tuning); they must be marked
	// Trainable in Context and be the only trainable variables Logits reads.
	TrainableVariables() []*mlctx.Variable
}

// GenerateOptions are the sampling settings of one Generate call, taken
// from Config.
type GenerateOptions struct {
	MaxPromptLength     int    // 0 means no limit
	MaxCompletionLength int    // most new tokens, ≥ 1
	MinCompletionLength int    // no stop token before this many; 0 means none
	Seed                uint64 // seeds the sampler
	// Sampling picks each token; its zero Temperature decodes greedily
	// (evaluation), training uses Config.Sampling.
	model.Sampling
}

// Completion is one sampled completion of a prompt.
type Completion struct {
	// PromptIDs are the prompt's tokens as the model saw them (chat
	// template applied, truncated to MaxPromptLength), without padding.
	PromptIDs []int32
	// IDs are the generated tokens, ending with the EOS token when
	// Truncated is false. The trainer trains on all of them.
	IDs []int32
	// Text is the decoded completion, without the EOS token; rewards see it.
	Text string
	// Truncated reports a completion that hit MaxCompletionLength without
	// an EOS token.
	Truncated bool
}

// LogitsInputs are the graph inputs of Policy.Logits.
type LogitsInputs struct {
	// Tokens [B, P+C] int32: each row's prompt left-padded to P columns,
	// then its completion right-padded to C columns.
	Tokens *graph.Node
	// Mask [B, P+C] int32: 1 for real tokens, 0 for padding (HF's
	// attention_mask). Rows that are all padding may give any finite logits.
	Mask *graph.Node
	// PromptLen is P, the column where completions start.
	PromptLen int
	// Reference asks for the reference model's logits.
	Reference bool
	// GradientCheckpointing asks that the gradient recompute each layer's
	// activations in the backward pass instead of keeping them from the
	// forward pass (Config.GradientCheckpointing). A Policy may ignore it.
	GradientCheckpointing bool
	// Group, when above 1, says that the rows come in groups of Group
	// consecutive rows whose prompt columns (Tokens and Mask) are equal,
	// so that a Policy may compute each group's prompt once
	// (Config.SharePrompts). A Policy may ignore it.
	Group int
}
