package grpo

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/grpokit/grpokit/agent"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
)

// MemoryPlanner is an optional interface of a Policy that can describe a
// run's memory needs (LMPolicy does). Before step 0 the Trainer prints
// the plan (memplan.Estimate) to Progress and stops with a
// *memplan.OutOfMemoryError when its peak exceeds Trainer.Memory (by
// default the memory available; a Budget with Off set prints the plan
// without stopping).
type MemoryPlanner interface {
	// MemoryRequest describes training with cfg; promptTokens is the
	// longest prompt seen (0: unknown).
	MemoryRequest(cfg Config, promptTokens int) memplan.Request
}

var _ MemoryPlanner = (*LMPolicy)(nil)

// MemoryHolder is an optional interface of a reward's Scorer that holds
// memory of its own, such as a reward model (rewardmodel.Model): the
// trainer's memory plan counts its weights and one forward pass over rows
// samples of up to tokens tokens each.
type MemoryHolder interface {
	MemoryBytes(rows, tokens int) (weights, forward int64)
}

// rewardMemory returns the memory plan's items of the rewards that hold
// memory (MemoryHolder), for a generation batch of rows samples of up to
// tokens tokens.
func (t *Trainer) rewardMemory(rows, tokens int) []memplan.Item {
	var out []memplan.Item
	for _, r := range t.rewards {
		h, ok := r.Scorer.(MemoryHolder)
		if !ok {
			continue
		}
		w, f := h.MemoryBytes(rows, tokens)
		out = append(out,
			memplan.Item{Name: fmt.Sprintf("reward %s: weights", r.Name), Bytes: w, Note: "as held"},
			memplan.Item{Name: fmt.Sprintf("reward %s: forward", r.Name), Bytes: f, Note: fmt.Sprintf("%d samples of ≤ %d tokens", rows, tokens)})
	}
	return out
}

// MemoryRequest describes training this policy with cfg to memplan.Estimate:
// its model's config and storage, its adapter's rank and target modules
// (none for full fine-tuning).
func (p *LMPolicy) MemoryRequest(cfg Config, promptTokens int) memplan.Request {
	c := p.model.Config()
	r := memplan.Request{Model: c, Train: cfg.MemorySettings(), Storage: p.model.Storage(), PromptTokens: promptTokens, WidensWeights: p.model.WidensWeights()}
	if p.adapter != nil {
		// The frozen base as held: every non-trainable variable in the
		// weights' scopes (bf16 matrices, NF4 codes and scales, norms).
		for v := range p.model.Context().IterVariables() {
			if sc := v.Scope(); !v.Trainable && (strings.HasPrefix(sc, "/model") || strings.HasPrefix(sc, "/lm_head")) {
				r.WeightBytes += int64(v.Shape().Memory())
			}
		}
		ac := p.adapter.Config()
		r.LoRARank, r.DoubleQuant = ac.R, ac.DoubleQuant
		r.LoRATargets = moduleKinds(p.adapter.Modules())
	} else {
		r.Storage = model.StorageF32
	}
	return r
}

// moduleKinds returns the distinct short names (q_proj, …) of adapter
// modules such as "model.layers.0.self_attn.q_proj".
func moduleKinds(modules []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range modules {
		k := m[strings.LastIndex(m, ".")+1:]
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// MemorySettings returns the settings of c a memory plan depends on.
func (c Config) MemorySettings() memplan.Training {
	return memplan.Training{
		BatchSize: c.BatchSize, GradientAccumulationSteps: c.GradientAccumulationSteps,
		GenerationBatchSize: c.EffectiveGenerationBatchSize(), NumGenerations: c.NumGenerations,
		MaxPromptLength: c.MaxPromptLength, MaxCompletionLength: c.MaxCompletionLength,
		Beta: c.Beta, GradientCheckpointing: c.GradientCheckpointing, LogitsChunkSize: c.LogitsChunkSize,
		RefModelSyncSteps: c.refModelSyncSteps(), PromptGroup: c.promptGroup(),
	}
}

// promptGroup is the rows per prompt that share their prompt in every
// micro-batch of a dataset's rollouts (sharedGroup), or 0: with
// share_prompts, whole groups per micro-batch and no shuffle across them.
func (c Config) promptGroup() int {
	g := c.NumGenerations
	if !c.SharePrompts || g < 2 || c.BatchSize%g != 0 || c.EffectiveStepsPerGeneration() > c.GradientAccumulationSteps {
		return 0
	}
	return g
}

// refModelSyncSteps returns RefModelSyncSteps with SyncRefModel, else 0.
func (c Config) refModelSyncSteps() int {
	if !c.SyncRefModel {
		return 0
	}
	return c.RefModelSyncSteps
}

// planMemory prints the memory plan before step 0 and checks it against
// t.Memory (or the memory available); with t.GCLimit it also sets Go's
// memory limit for the run (memplan.LimitGC). src gives the longest of the
// first prompts. The limit it returns (nil without one) is raised if the
// run needs more, reports that after each step and is restored at the end.
func (t *Trainer) planMemory(src source) (*memplan.GCLimit, error) {
	mp, ok := t.policy.(MemoryPlanner)
	if !ok {
		return nil, nil
	}
	req := mp.MemoryRequest(t.cfg, t.longestPrompt(src))
	req.Train.Trajectories = t.tools != nil
	if _, ok := src.(*datasetSource); !ok {
		req.Train.PromptGroup = 0 // an Env's later turns have prompts of their own
	}
	prompt := cmp.Or(req.PromptTokens, t.cfg.MaxPromptLength, 512) // as Estimate assumes
	req.Extra = append(req.Extra, t.rewardMemory(t.cfg.EffectiveGenerationBatchSize(), prompt+t.cfg.MaxCompletionLength)...)
	plan, err := memplan.Estimate(req)
	if err != nil {
		// A model the planner cannot describe trains anyway.
		t.logger().Warn("grpo: no memory plan for this model; training without the check", "err", err)
		return nil, nil
	}
	budget := memplan.Available()
	if t.Memory != nil {
		budget = *t.Memory
	}
	return memplan.Enforce(t.progress(), t.logger(), plan, budget, t.GCLimit)
}

// longestPrompt returns the token count of the longest of the dataset's
// first prompts (capped at MaxPromptLength), or 0 when unknown. With tools
// (SetTools) a prompt is what a trajectory starts from: rendered with the
// tools' schemas declared.
func (t *Trainer) longestPrompt(src source) int {
	ds, ok := src.(*datasetSource)
	if !ok {
		return 0
	}
	var encode func(ex dataset.Example, maxLen int) ([]int, error)
	if t.tools != nil {
		_, raw := t.tools.runner.Renderer().Format().(agent.RawFormat)
		encode = func(ex dataset.Example, _ int) ([]int, error) {
			return t.tools.runner.PromptIDs(agentPrompt(ex, raw))
		}
	} else if enc, ok := t.policy.(interface {
		PromptIDs(ex dataset.Example, maxLen int) ([]int, error)
	}); ok {
		encode = enc.PromptIDs
	} else {
		return 0
	}
	n, err := LongestPrompt(ds.data, encode, t.cfg.MaxPromptLength)
	if err != nil {
		return 0
	}
	return n
}

// LongestPrompt returns the token count of the longest of data's first 64
// prompts as encode makes them (capped at maxLen): the prompt length the
// memory plan assumes, for the trainer and for a plan made before any
// model is loaded (encode: EncodePrompt).
func LongestPrompt(data dataset.Dataset, encode func(ex dataset.Example, maxLen int) ([]int, error), maxLen int) (int, error) {
	n := 0
	for i := range min(data.Len(), 64) {
		ex, err := data.Example(i)
		if err != nil {
			return 0, fmt.Errorf("example %d: %w", i+1, err)
		}
		ids, err := encode(ex, maxLen)
		if err != nil {
			return 0, fmt.Errorf("example %d: %w", i+1, err)
		}
		n = max(n, len(ids))
	}
	return n, nil
}
