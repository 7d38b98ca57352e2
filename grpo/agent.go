package grpo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/grpokit/grpokit/agent"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/tokenizer"
)

// Tools makes every completion a tool-calling trajectory (TRL's
// GRPOTrainer tools and environment_factory): see Trainer.SetTools.
type Tools struct {
	// Tools are the stateless tools every trajectory may call.
	Tools []*agent.Tool
	// Env, when set, makes one environment per trajectory (reset before
	// it, its tools offered besides Tools). Score an environment that owns
	// its reward with agent.EnvReward.
	Env agent.EnvFactory
	// Renderer renders prompts and tool results; nil builds one from the
	// LMPolicy's tokenizer and chat options (agent.NewRenderer, with
	// Format).
	Renderer *agent.Renderer
	// Format is the tool-call format when Renderer is nil; nil detects it
	// from the chat template (agent.DetectFormat).
	Format agent.Format
	// Timeout bounds each tool call; 0 means agent.DefaultToolTimeout.
	Timeout time.Duration
}

// chatPolicy is a policy that renders chats with a tokenizer (LMPolicy).
type chatPolicy interface {
	Tokenizer() *tokenizer.Pretrained
	ChatOptions() tokenizer.ChatOptions
}

// toolRun is the trainer's tool setup: the runner and its generator.
type toolRun struct {
	runner *agent.Runner
	gen    *policyGenerator
}

// SetTools makes every completion of Train a whole trajectory: the policy
// generates, its tool calls are run, their results appended, and so on
// (agent.Runner), up to Config.MaxToolCallingIterations rounds of calls and
// Config.MaxCompletionLength tokens in all. The inserted tokens (tool
// results and the template's turn markers) get no loss, KL or entropy and
// count in no normalizer; rewards see the whole trajectory
// (reward.Sample.Trajectory, Completion as text, Final the answer, Env
// the environment). It checks, before step 0, that the chat template renders
// tool calls and results. Call it before training; TrainEnv does not take
// tools.
func (t *Trainer) SetTools(tools Tools) error {
	if t.cfg.EvalStrategy == EvalByStep {
		return errors.New("grpo: SetTools: evaluation during training (eval_strategy \"steps\") generates single turns without tools; evaluate trajectories with an agent.Runner instead")
	}
	r := tools.Renderer
	if r == nil {
		cp, ok := t.policy.(chatPolicy)
		if !ok || cp.Tokenizer() == nil {
			return fmt.Errorf("grpo: SetTools: policy %T has no tokenizer: give Tools.Renderer", t.policy)
		}
		var err error
		if r, err = agent.NewRenderer(cp.Tokenizer(), agent.RendererOptions{Format: tools.Format, Vars: cp.ChatOptions().Vars}); err != nil {
			return fmt.Errorf("grpo: SetTools: %w", err)
		}
	}
	gen := &policyGenerator{t: t}
	runner, err := agent.NewRunner(gen, r, agent.Config{
		NumGenerations:           t.cfg.NumGenerations,
		MaxPromptLength:          t.cfg.MaxPromptLength,
		MaxCompletionLength:      t.cfg.MaxCompletionLength,
		MaxToolCallingIterations: t.cfg.MaxToolCallingIterations,
		Executor:                 agent.Executor{Timeout: tools.Timeout},
	}, tools.Tools, tools.Env)
	if err != nil {
		return fmt.Errorf("grpo: SetTools: %w", err)
	}
	t.tools = &toolRun{runner: runner, gen: gen}
	return nil
}

// policyGenerator continues trajectories with the policy's Generate.
type policyGenerator struct {
	t    *Trainer
	opts GenerateOptions
}

func (g *policyGenerator) Generate(ctx context.Context, seqs [][]int, n, maxNew int, seed uint64) ([]agent.Turn, error) {
	exs := make([]dataset.Example, len(seqs))
	for i, s := range seqs {
		exs[i] = dataset.Example{PromptIDs: s}
	}
	o := g.opts
	o.MaxPromptLength, o.MaxCompletionLength, o.Seed = 0, maxNew, seed
	o.MinCompletionLength = min(o.MinCompletionLength, maxNew)
	comps, err := g.t.policy.Generate(ctx, exs, n, o)
	if err != nil {
		return nil, err
	}
	out := make([]agent.Turn, len(comps))
	for i, c := range comps {
		ids := make([]int, len(c.IDs))
		for j, id := range c.IDs {
			ids[j] = int(id)
		}
		out[i] = agent.Turn{IDs: ids, Stopped: !c.Truncated}
	}
	return out, nil
}

// agentPrompt is the agent.Prompt of a dataset example: its messages, or
// its prompt text (a user message for a chat template; the text itself
// for a model without one).
func agentPrompt(ex dataset.Example, raw bool) agent.Prompt {
	p := agent.Prompt{Meta: map[string]string{}}
	for k, v := range ex.Meta {
		p.Meta[k] = v
	}
	if ex.Answer != "" {
		p.Meta["answer"] = ex.Answer
	}
	switch {
	case len(ex.Messages) > 0:
		for _, m := range ex.Messages {
			p.Messages = append(p.Messages, tokenizer.Message{Role: m.Role, Content: m.Content})
		}
	case raw:
		p.Text = ex.Prompt
	default:
		p.Messages = []tokenizer.Message{{Role: "user", Content: ex.Prompt}}
	}
	return p
}

// ToolPromptIDs returns the tokens a tool-calling trajectory of ex starts
// from: ex rendered by r with tools declared, as the trajectories of
// SetTools start (the last maxLen kept; 0 keeps all), without an
// environment's Reset suffix. A memory plan made before any model is
// loaded sizes prompts with it (LongestPrompt).
func ToolPromptIDs(r *agent.Renderer, tools []*agent.Tool, ex dataset.Example, maxLen int) ([]int, error) {
	_, raw := r.Format().(agent.RawFormat)
	ids, err := r.PromptIDs(agentPrompt(ex, raw), tools)
	if err != nil {
		return nil, fmt.Errorf("grpo: %w", err)
	}
	if maxLen > 0 && len(ids) > maxLen {
		ids = ids[len(ids)-maxLen:]
	}
	return ids, nil
}

// trajectories makes G trajectories of each prompt and their rows and
// reward samples; it adds the tool counts to tally.
func (t *Trainer) trajectories(ctx context.Context, prompts []dataset.Example, turn int, episodes []int, seed uint64, tally *rewardTally) ([]*row, []reward.Sample, error) {
	if len(prompts) > 0 && len(prompts[0].PromptIDs) > 0 {
		return nil, nil, errors.New("grpo: tools: examples given as PromptIDs cannot be rendered with tools: give Prompt or Messages")
	}
	_, raw := t.tools.runner.Renderer().Format().(agent.RawFormat)
	ps := make([]agent.Prompt, len(prompts))
	for i, ex := range prompts {
		ps[i] = agentPrompt(ex, raw)
	}
	g := t.cfg.NumGenerations
	t.tools.gen.opts = t.generateOptions(seed)
	b, err := t.tools.runner.Rollout(ctx, ps, seed)
	if err != nil {
		return nil, nil, fmt.Errorf("grpo: tools: %w", err)
	}
	tally.toolCalls += b.Calls
	tally.toolFailures += b.Failures
	tally.turns += b.Turns
	rows := make([]*row, len(b.Trajectories))
	samples := make([]reward.Sample, len(b.Trajectories))
	for i := range b.Trajectories {
		tr := &b.Trajectories[i]
		ex := prompts[i/g]
		if len(tr.IDs) == 0 {
			return nil, nil, fmt.Errorf("grpo: tools: empty trajectory (%d of prompt %d)", i%g, i/g)
		}
		text := tr.Transcript()
		ids := toInt32(tr.IDs)
		samples[i] = reward.Sample{Prompt: ex.Text(), Completion: text, Answer: ex.Answer, Turn: turn, Meta: ex.Meta,
			CompletionIDs: ids, Messages: rewardMessages(ex.Messages), Trajectory: agent.RewardMessages(tr.Messages), Env: tr.Env}
		rows[i] = &row{
			Prompt: ex.Text(), Completion: text, Answer: ex.Answer, Turn: turn, Episode: episodes[i/g],
			Truncated: tr.Truncated, PromptIDs: toInt32(tr.PromptIDs), IDs: ids, ToolMask: tr.Mask,
		}
	}
	return rows, samples, nil
}
