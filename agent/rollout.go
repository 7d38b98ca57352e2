package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/grpokit/grpokit/tokenizer"
)

// Generator continues token sequences by one assistant turn each. All
// rows of a call advance together in one batched generation.
type Generator interface {
	// Generate samples n continuations of every sequence (continuation j
	// of seqs[i] at index i·n+j), each at most maxNew tokens and ending
	// with a stop token when it stopped. Equal inputs and seed give equal
	// outputs.
	Generate(ctx context.Context, seqs [][]int, n, maxNew int, seed uint64) ([]Turn, error)
}

// Turn is one generated continuation.
type Turn struct {
	// IDs are the new tokens, the stop token last when Stopped.
	IDs []int
	// Stopped reports that a stop token ended the turn.
	Stopped bool
}

// Config sets the trajectory limits of a Runner.
type Config struct {
	// NumGenerations is the number of trajectories per prompt (GRPO's G).
	NumGenerations int
	// MaxPromptLength keeps the last MaxPromptLength tokens of a longer
	// rendered prompt (as TRL truncates on the left); 0 means no limit.
	MaxPromptLength int
	// MaxCompletionLength bounds each trajectory's tokens after the prompt:
	// the model's and the inserted ones together, as TRL's
	// max_completion_length. A tool result whose insertion would pass it is
	// dropped and the trajectory ends.
	MaxCompletionLength int
	// MaxToolCallingIterations bounds the rounds of tool calls of one
	// trajectory (TRL's max_tool_calling_iterations); 0 means no bound
	// besides MaxCompletionLength. The calls of a turn past the bound are
	// not run and the trajectory ends with that turn.
	MaxToolCallingIterations int
	// Executor runs the calls (timeout, concurrency).
	Executor Executor
}

// Trajectory is one rollout: the prompt, then the model's turns with the
// tool results between them.
type Trajectory struct {
	// Prompt is the index of the prompt in the Rollout call.
	Prompt int
	// PromptIDs are the rendered prompt's tokens (tools declared, the
	// environment's suffix appended).
	PromptIDs []int
	// IDs are the completion's tokens: every turn the model generated and
	// every insertion after a turn with calls, in order.
	IDs []int
	// Mask has one entry per IDs token: 1 for a token the model generated,
	// 0 for a token the template or a tool inserted. Losses, KL, entropy
	// and their normalizers count only the 1s.
	Mask []int32
	// Messages are the completion as chat messages: each assistant turn
	// (with its tool_calls) and the result messages after it.
	Messages []tokenizer.Message
	// Turns is the number of model turns; Calls and Failures count the
	// tool calls made and those that failed.
	Turns, Calls, Failures int
	// Truncated reports a trajectory that hit MaxCompletionLength in a
	// model turn (no stop token at its end).
	Truncated bool
	// Env is the trajectory's environment; nil without a factory.
	Env Environment
}

// ModelTokens returns how many of the completion's tokens the model wrote.
func (t *Trajectory) ModelTokens() int {
	n := 0
	for _, m := range t.Mask {
		n += int(m)
	}
	return n
}

// FinalContent is the text of the last assistant turn outside tool calls:
// the answer of a trajectory that ended without a call.
func (t *Trajectory) FinalContent() string {
	for i := len(t.Messages) - 1; i >= 0; i-- {
		if t.Messages[i].Role == "assistant" {
			return t.Messages[i].Content
		}
	}
	return ""
}

// addTurn appends a model turn: its tokens (ids, the stop token
// included; mask 1) and its assistant message, which keeps the turn's
// text as generated in Extra["text"].
func (t *Trajectory) addTurn(f Format, ids []int, text, content string, calls []Call) {
	t.IDs = append(t.IDs, ids...)
	for range ids {
		t.Mask = append(t.Mask, 1)
	}
	msg := f.AssistantMessage(text, content, calls)
	if msg.Extra == nil {
		msg.Extra = map[string]any{}
	}
	msg.Extra["text"] = text
	t.Messages = append(t.Messages, msg)
	t.Turns++
}

// addResults appends the insertion after a turn's calls: its tokens (ins,
// as Renderer.ResultIDs renders res; mask 0) and the result messages.
func (t *Trajectory) addResults(f Format, ins []int, res []Result) {
	t.IDs = append(t.IDs, ins...)
	for range ins {
		t.Mask = append(t.Mask, 0)
	}
	t.Messages = append(t.Messages, f.ResultMessages(res)...)
}

// Transcript is the completion as text for rewards that read text: the
// assistant turns as generated and each tool result, one per line, marked
// "[tool NAME] ".
func (t *Trajectory) Transcript() string {
	var b strings.Builder
	for _, m := range t.Messages {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		switch m.Role {
		case "assistant":
			if raw, ok := m.Extra["text"].(string); ok {
				b.WriteString(raw)
			} else {
				b.WriteString(m.Content)
			}
		default:
			name, _ := m.Extra["name"].(string)
			fmt.Fprintf(&b, "[%s %s] %s", m.Role, name, m.Content)
		}
	}
	return b.String()
}

// Batch is the trajectories of one Rollout call and their tool counts.
type Batch struct {
	// Trajectories in group order: trajectory j of prompt i at i·G+j.
	Trajectories []Trajectory
	// Calls, Failures and Turns are summed over the trajectories.
	Calls, Failures, Turns int
}

// CallFrequency is TRL's tools/call_frequency: calls per trajectory.
func (b *Batch) CallFrequency() float64 {
	if len(b.Trajectories) == 0 {
		return 0
	}
	return float64(b.Calls) / float64(len(b.Trajectories))
}

// FailureFrequency is TRL's tools/failure_frequency: failed calls per call.
func (b *Batch) FailureFrequency() float64 {
	if b.Calls == 0 {
		return 0
	}
	return float64(b.Failures) / float64(b.Calls)
}

// TurnsPerTrajectory is the mean number of model turns.
func (b *Batch) TurnsPerTrajectory() float64 {
	if len(b.Trajectories) == 0 {
		return 0
	}
	return float64(b.Turns) / float64(len(b.Trajectories))
}

// Runner makes trajectory rollouts: each of G completions of a prompt is
// a whole conversation — generate, parse the calls, run them, append the
// results, generate again — until the model stops calling, the turn is cut
// by MaxCompletionLength, or MaxToolCallingIterations rounds are done. A
// Runner is not safe for concurrent use.
type Runner struct {
	gen     Generator
	r       *Renderer
	cfg     Config
	tools   []*Tool
	factory EnvFactory
	pool    []Environment
	// names of every tool offered, for checking environments
	names []string
}

// NewRunner checks cfg and the tools and returns a Runner. tools are
// stateless tools every trajectory gets; factory (optional) makes the
// per-trajectory environments whose Tools are added. Two tools with one
// name are an error, as is a Runner with no tool at all.
func NewRunner(gen Generator, r *Renderer, cfg Config, tools []*Tool, factory EnvFactory) (*Runner, error) {
	switch {
	case gen == nil:
		return nil, errors.New("agent: runner: no generator")
	case r == nil:
		return nil, errors.New("agent: runner: no renderer")
	case cfg.NumGenerations < 1:
		return nil, fmt.Errorf("agent: runner: num_generations %d, want ≥ 1", cfg.NumGenerations)
	case cfg.MaxCompletionLength < 1:
		return nil, fmt.Errorf("agent: runner: max_completion_length %d, want ≥ 1", cfg.MaxCompletionLength)
	case cfg.MaxToolCallingIterations < 0:
		return nil, fmt.Errorf("agent: runner: max_tool_calling_iterations %d, want ≥ 0 (0: no bound)", cfg.MaxToolCallingIterations)
	}
	run := &Runner{gen: gen, r: r, cfg: cfg, tools: tools, factory: factory}
	all := slices.Clone(tools)
	if factory != nil {
		env, err := factory()
		if err != nil {
			return nil, fmt.Errorf("agent: runner: environment factory: %w", err)
		}
		if env == nil {
			return nil, errors.New("agent: runner: environment factory returned nil")
		}
		all = append(all, env.Tools()...)
		run.pool = append(run.pool, env)
	}
	ts, err := NewToolset(all...)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, errors.New("agent: runner: no tools (give tools or an environment with tools)")
	}
	run.names = ts.Names()
	return run, nil
}

// Renderer returns the runner's renderer.
func (run *Runner) Renderer() *Renderer { return run.r }

// Tools returns the tools every trajectory is offered (stateless tools,
// then the environment's), as the prompt declares them.
func (run *Runner) Tools() []*Tool {
	out := slices.Clone(run.tools)
	if len(run.pool) > 0 {
		out = append(out, run.pool[0].Tools()...)
	}
	return out
}

// PromptIDs returns the tokens a rollout of p starts from without an
// environment: p rendered with the stateless tools and the environment's
// tools declared (Tools), the last MaxPromptLength kept. An environment's
// Reset suffix is not part of it (PromptIDs resets nothing). The trainer's
// memory plan sizes prompts with it.
func (run *Runner) PromptIDs(p Prompt) ([]int, error) {
	ids, err := run.r.PromptIDs(p, run.Tools())
	if err != nil {
		return nil, err
	}
	if m := run.cfg.MaxPromptLength; m > 0 && len(ids) > m {
		ids = ids[len(ids)-m:]
	}
	return ids, nil
}

type rowState struct {
	traj   *Trajectory
	tools  *Toolset
	rounds int
	done   bool
	calls  []Call
}

// Rollout makes NumGenerations trajectories of every prompt. seed seeds
// the sampling: the same prompts, weights, seed and tools give the same
// trajectories.
func (run *Runner) Rollout(ctx context.Context, prompts []Prompt, seed uint64) (*Batch, error) {
	G := run.cfg.NumGenerations
	n := len(prompts) * G
	for len(run.pool) < n && run.factory != nil {
		env, err := run.factory()
		if err != nil {
			return nil, fmt.Errorf("agent: environment factory: %w", err)
		}
		if env == nil {
			return nil, errors.New("agent: environment factory returned nil")
		}
		run.pool = append(run.pool, env)
	}
	batch := &Batch{Trajectories: make([]Trajectory, n)}
	rows := make([]*rowState, n)
	for k := range n {
		i := k / G
		p := prompts[i]
		all := slices.Clone(run.tools)
		t := &batch.Trajectories[k]
		t.Prompt = i
		if run.factory != nil {
			env := run.pool[k]
			suffix, err := env.Reset(ctx, p)
			if err != nil {
				return nil, fmt.Errorf("agent: prompt %d: environment reset: %w", i, err)
			}
			p = withSuffix(p, suffix)
			all = append(all, env.Tools()...)
			t.Env = env
		}
		ts, err := NewToolset(all...)
		if err != nil {
			return nil, fmt.Errorf("agent: prompt %d: %w", i, err)
		}
		if got := ts.Names(); !slices.Equal(got, run.names) {
			return nil, fmt.Errorf("agent: prompt %d: the environment offers tools %v, the first one offered %v", i, got, run.names)
		}
		ids, err := run.r.PromptIDs(p, ts.Tools())
		if err != nil {
			return nil, fmt.Errorf("agent: prompt %d: %w", i, err)
		}
		if m := run.cfg.MaxPromptLength; m > 0 && len(ids) > m {
			ids = ids[len(ids)-m:]
		}
		t.PromptIDs = ids
		rows[k] = &rowState{traj: t, tools: ts}
	}
	tok := run.r.tok.Tokenizer
	f := run.r.format
	maxLen := run.cfg.MaxCompletionLength
	for iter := 0; ; iter++ {
		var active []*rowState
		for _, r := range rows {
			if !r.done {
				active = append(active, r)
			}
		}
		if len(active) == 0 {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		// Generate one turn of every active row in one batch. On the first
		// turn rows of one prompt with equal tokens share it (n = G).
		seqs, per := run.sequences(active, iter == 0)
		maxNew := 0
		for _, r := range active {
			maxNew = max(maxNew, maxLen-len(r.traj.IDs))
		}
		turns, err := run.gen.Generate(ctx, seqs, per, maxNew, turnSeed(seed, iter))
		if err != nil {
			return nil, fmt.Errorf("agent: generate (turn %d): %w", iter+1, err)
		}
		if len(turns) != len(active) {
			return nil, fmt.Errorf("agent: generate returned %d turns for %d rows", len(turns), len(active))
		}
		var jobs []Job
		var callers []*rowState
		for a, r := range active {
			t := r.traj
			turn := turns[a]
			ids, stopped := turn.IDs, turn.Stopped
			if room := maxLen - len(t.IDs); len(ids) > room {
				ids, stopped = ids[:room], false
			}
			textIDs := ids
			if stopped && len(textIDs) > 0 {
				textIDs = textIDs[:len(textIDs)-1]
			}
			text := tok.Decode(textIDs, true)
			content, calls := f.Parse(text)
			if !stopped {
				// A cut turn ends the trajectory; its calls (likely
				// incomplete) are not run.
				t.Truncated = true
				calls = nil
			}
			t.addTurn(f, ids, text, content, calls)
			batch.Turns++
			if len(calls) == 0 || (run.cfg.MaxToolCallingIterations > 0 && r.rounds >= run.cfg.MaxToolCallingIterations) {
				r.done = true
				continue
			}
			r.rounds++
			r.calls = calls
			callers = append(callers, r)
			for _, c := range calls {
				jobs = append(jobs, Job{Tools: r.tools, Call: c})
			}
		}
		results := run.cfg.Executor.Run(ctx, jobs)
		for _, r := range callers {
			t := r.traj
			res := results[:len(r.calls)]
			results = results[len(r.calls):]
			r.calls = nil
			for _, x := range res {
				t.Calls++
				batch.Calls++
				if x.Err != nil {
					t.Failures++
					batch.Failures++
				}
			}
			ins, err := run.r.ResultIDs(res)
			if err != nil {
				return nil, err
			}
			if len(t.IDs)+len(ins) > maxLen {
				// As TRL: a result that does not fit is dropped and the
				// trajectory ends with the turn that called.
				r.done = true
				continue
			}
			t.addResults(f, ins, res)
			if len(t.IDs) >= maxLen {
				r.done = true
			}
		}
	}
	return batch, nil
}

// sequences returns the token sequences of the active rows and the number
// of continuations per sequence: on the first turn, G per prompt when the
// G rows of every prompt have equal tokens.
func (run *Runner) sequences(active []*rowState, first bool) ([][]int, int) {
	G := run.cfg.NumGenerations
	if first && G > 1 && len(active)%G == 0 {
		shared := true
		for k := 0; k < len(active) && shared; k += G {
			for j := 1; j < G; j++ {
				if !slices.Equal(active[k].traj.PromptIDs, active[k+j].traj.PromptIDs) {
					shared = false
					break
				}
			}
		}
		if shared {
			seqs := make([][]int, 0, len(active)/G)
			for k := 0; k < len(active); k += G {
				seqs = append(seqs, active[k].traj.PromptIDs)
			}
			return seqs, G
		}
	}
	seqs := make([][]int, len(active))
	for a, r := range active {
		seqs[a] = append(slices.Clone(r.traj.PromptIDs), r.traj.IDs...)
	}
	return seqs, 1
}

// turnSeed derives the sampling seed of turn iter from the rollout's seed.
func turnSeed(seed uint64, iter int) uint64 {
	if iter == 0 {
		return seed
	}
	x := seed + uint64(iter)*0x9E3779B97F4A7C15
	x ^= x >> 31
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 29
	return x
}

// withSuffix appends an environment's suffix to the last user message.
func withSuffix(p Prompt, suffix string) Prompt {
	if suffix == "" {
		return p
	}
	if len(p.Messages) == 0 {
		p.Text += suffix
		return p
	}
	msgs := slices.Clone(p.Messages)
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			msgs[i].Content += suffix
			p.Messages = msgs
			return p
		}
	}
	msgs[len(msgs)-1].Content += suffix
	p.Messages = msgs
	return p
}
