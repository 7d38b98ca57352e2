package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/tokenizer"
)

// tinyTok is a byte-level tokenizer with ChatML specials; <|im_end|> is EOS.
func tinyTok(t *testing.T) *tokenizer.Pretrained {
	t.Helper()
	dir := t.TempDir()
	if err := tokenizer.WriteTinyDir(dir, []string{"<call>", "</call>", "<result>", "</result>", "calc", "count"}); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// scripted is a Generator whose turn is a function of the sequence's text.
// It records every call.
type scripted struct {
	tok   *tokenizer.Pretrained
	reply func(seq string) string // the turn's text; a trailing "|" means no stop token
	mu    sync.Mutex
	calls [][][]int
}

func (g *scripted) Generate(ctx context.Context, seqs [][]int, n, maxNew int, seed uint64) ([]Turn, error) {
	g.mu.Lock()
	g.calls = append(g.calls, slices.Clone(seqs))
	g.mu.Unlock()
	var out []Turn
	for _, s := range seqs {
		for range n {
			text := g.reply(g.tok.Tokenizer.Decode(s, false))
			stop := !strings.HasSuffix(text, "|")
			ids := g.tok.Tokenizer.Encode(strings.TrimSuffix(text, "|"), false)
			if stop {
				ids = append(ids, g.tok.EOS[0])
			}
			if len(ids) > maxNew {
				ids, stop = ids[:maxNew], false
			}
			out = append(out, Turn{IDs: ids, Stopped: stop})
		}
	}
	return out, nil
}

func plainRunner(t *testing.T, g *scripted, cfg Config, tools []*Tool, f EnvFactory) *Runner {
	t.Helper()
	r, err := NewRenderer(g.tok, RendererOptions{Format: Plain{}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := NewRunner(g, r, cfg, tools, f)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestRolloutTrajectory(t *testing.T) {
	tok := tinyTok(t)
	enc := func(s string) []int { return tok.Tokenizer.Encode(s, false) }
	eos := tok.EOS[0]
	g := &scripted{tok: tok, reply: func(seq string) string {
		switch {
		case strings.HasSuffix(seq, "</result>"):
			return "A: " + seq[strings.LastIndex(seq, "<result>")+len("<result>"):len(seq)-len("</result>")]
		case strings.Contains(seq, "bad"):
			return `<call>nope {"a": 1}</call>`
		default:
			return `<call>calc {"a": 12, "b": 34, "op": "mul"}</call>`
		}
	}}
	run := plainRunner(t, g, Config{NumGenerations: 2, MaxCompletionLength: 200, MaxToolCallingIterations: 1}, []*Tool{calcTool(t)}, nil)
	b, err := run.Rollout(context.Background(), []Prompt{{Text: "Q: 12*34="}, {Text: "Q: bad"}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Trajectories) != 4 {
		t.Fatalf("%d trajectories, want 4", len(b.Trajectories))
	}
	turn1 := append(enc(`<call>calc {"a": 12, "b": 34, "op": "mul"}</call>`), eos)
	ins := enc("<result>408</result>")
	turn2 := append(enc("A: 408"), eos)
	for j, tr := range b.Trajectories[:2] {
		wantIDs := slices.Concat(turn1, ins, turn2)
		if !slices.Equal(tr.IDs, wantIDs) {
			t.Errorf("trajectory %d: ids %q, want %q", j, tok.Tokenizer.Decode(tr.IDs, false), tok.Tokenizer.Decode(wantIDs, false))
		}
		var wantMask []int32
		for _, part := range []struct {
			n int
			m int32
		}{{len(turn1), 1}, {len(ins), 0}, {len(turn2), 1}} {
			for range part.n {
				wantMask = append(wantMask, part.m)
			}
		}
		if !slices.Equal(tr.Mask, wantMask) {
			t.Errorf("trajectory %d: mask %v, want %v", j, tr.Mask, wantMask)
		}
		if tr.Turns != 2 || tr.Calls != 1 || tr.Failures != 0 || tr.Truncated {
			t.Errorf("trajectory %d: turns %d calls %d failures %d truncated %v", j, tr.Turns, tr.Calls, tr.Failures, tr.Truncated)
		}
		if got := tr.FinalContent(); got != "A: 408" {
			t.Errorf("trajectory %d: final content %q", j, got)
		}
		if tr.ModelTokens() != len(turn1)+len(turn2) {
			t.Errorf("trajectory %d: %d model tokens, want %d", j, tr.ModelTokens(), len(turn1)+len(turn2))
		}
	}
	// The unknown tool: a counted failure whose error the model reads.
	for j, tr := range b.Trajectories[2:] {
		if tr.Calls != 1 || tr.Failures != 1 {
			t.Errorf("bad trajectory %d: calls %d failures %d", j, tr.Calls, tr.Failures)
		}
		if !strings.Contains(tr.Transcript(), `unknown tool \"nope\" (available: calc)`) {
			t.Errorf("bad trajectory %d: transcript lacks the error:\n%s", j, tr.Transcript())
		}
	}
	if b.Calls != 4 || b.Failures != 2 || b.CallFrequency() != 1 || b.FailureFrequency() != 0.5 {
		t.Errorf("batch: calls %d failures %d call freq %g failure freq %g", b.Calls, b.Failures, b.CallFrequency(), b.FailureFrequency())
	}
	// One batched generation per turn. The first shares each prompt
	// among its G rows; the second continues every row with exactly its
	// previous tokens plus the inserted ones, no re-rendering.
	if len(g.calls) != 2 {
		t.Fatalf("%d generate calls, want 2", len(g.calls))
	}
	if len(g.calls[0]) != 2 || len(g.calls[1]) != 4 {
		t.Fatalf("generate batches %d, %d rows; want 2 (shared prompts), 4", len(g.calls[0]), len(g.calls[1]))
	}
	tr := b.Trajectories[0]
	if want := slices.Concat(tr.PromptIDs, turn1, ins); !slices.Equal(g.calls[1][0], want) {
		t.Errorf("second turn continued %q, want %q", tok.Tokenizer.Decode(g.calls[1][0], false), tok.Tokenizer.Decode(want, false))
	}
}

func TestRolloutLimits(t *testing.T) {
	tok := tinyTok(t)
	always := &scripted{tok: tok, reply: func(string) string { return `<call>calc {"a": 1, "b": 2}</call>` }}
	t.Run("max_tool_calling_iterations", func(t *testing.T) {
		run := plainRunner(t, always, Config{NumGenerations: 1, MaxCompletionLength: 1000, MaxToolCallingIterations: 3}, []*Tool{calcTool(t)}, nil)
		b, err := run.Rollout(context.Background(), []Prompt{{Text: "go"}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		tr := b.Trajectories[0]
		if tr.Turns != 4 || tr.Calls != 3 {
			t.Errorf("turns %d calls %d, want 4 turns (3 rounds of calls, then one whose calls are not run)", tr.Turns, tr.Calls)
		}
		if tr.Mask[len(tr.Mask)-1] != 1 {
			t.Error("the trajectory does not end with the model's turn")
		}
	})
	t.Run("overflowing result dropped", func(t *testing.T) {
		turn := len(tok.Tokenizer.Encode(`<call>calc {"a": 1, "b": 2}</call>`, false)) + 1
		ins := len(tok.Tokenizer.Encode("<result>3</result>", false))
		run := plainRunner(t, always, Config{NumGenerations: 1, MaxCompletionLength: turn + ins - 1}, []*Tool{calcTool(t)}, nil)
		b, err := run.Rollout(context.Background(), []Prompt{{Text: "go"}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		tr := b.Trajectories[0]
		if len(tr.IDs) != turn || slices.Contains(tr.Mask, 0) || tr.Truncated {
			t.Errorf("ids %d (want %d), mask %v, truncated %v: the result should be dropped and the trajectory end", len(tr.IDs), turn, tr.Mask, tr.Truncated)
		}
		if last := tr.Messages[len(tr.Messages)-1]; last.Role != "assistant" {
			t.Errorf("the dropped result is still in the messages: %+v", tr.Messages)
		}
		if tr.Calls != 1 {
			t.Errorf("calls %d, want 1 (the call ran)", tr.Calls)
		}
	})
	t.Run("max_completion_length over the whole trajectory", func(t *testing.T) {
		turn := len(tok.Tokenizer.Encode(`<call>calc {"a": 1, "b": 2}</call>`, false)) + 1
		ins := len(tok.Tokenizer.Encode("<result>3</result>", false))
		limit := turn + ins + 5
		run := plainRunner(t, always, Config{NumGenerations: 1, MaxCompletionLength: limit}, []*Tool{calcTool(t)}, nil)
		b, err := run.Rollout(context.Background(), []Prompt{{Text: "go"}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		tr := b.Trajectories[0]
		if len(tr.IDs) != limit || !tr.Truncated || tr.Calls != 1 {
			t.Errorf("ids %d (want %d), truncated %v, calls %d (want 1: the cut turn's call is not run)", len(tr.IDs), limit, tr.Truncated, tr.Calls)
		}
	})
}

// counterEnv counts calls of its tool; its reward is the count.
type counterEnv struct {
	n     int
	tools []*Tool
}

func newCounterEnv() (Environment, error) {
	e := &counterEnv{}
	e.tools = []*Tool{MustTool("count", "count one more", func(ctx context.Context, _ struct{}) (string, error) {
		e.n++
		return fmt.Sprint(e.n), nil
	})}
	return e, nil
}

func (e *counterEnv) Reset(ctx context.Context, p Prompt) (string, error) {
	e.n = 0
	return " [fresh]", nil
}
func (e *counterEnv) Tools() []*Tool                              { return e.tools }
func (e *counterEnv) Reward(ctx context.Context) (float64, error) { return float64(e.n), nil }

func TestRolloutEnvironment(t *testing.T) {
	tok := tinyTok(t)
	// Each row counts up to the number in its prompt, one call per turn.
	g := &scripted{tok: tok, reply: func(seq string) string {
		want := int(seq[strings.Index(seq, "to ")+3] - '0')
		if strings.Count(seq, "<result>") < want {
			return "<call>count</call>"
		}
		return "done"
	}}
	run := plainRunner(t, g, Config{NumGenerations: 2, MaxCompletionLength: 500}, nil, newCounterEnv)
	for round := range 2 { // the second round reuses (resets) the instances
		b, err := run.Rollout(context.Background(), []Prompt{{Text: "count to 3"}, {Text: "count to 1"}}, uint64(round))
		if err != nil {
			t.Fatal(err)
		}
		envs := map[Environment]bool{}
		for k, tr := range b.Trajectories {
			want := []int{3, 3, 1, 1}[k]
			rw, err := tr.Env.(Rewarder).Reward(context.Background())
			if err != nil || rw != float64(want) || tr.Calls != want {
				t.Errorf("round %d trajectory %d: reward %v (%v), calls %d, want %d", round, k, rw, err, tr.Calls, want)
			}
			if !strings.HasSuffix(tok.Tokenizer.Decode(tr.PromptIDs, false), " [fresh]") {
				t.Errorf("round %d trajectory %d: the reset suffix is not in the prompt", round, k)
			}
			envs[tr.Env] = true
		}
		if len(envs) != 4 {
			t.Errorf("round %d: %d environments for 4 trajectories", round, len(envs))
		}
	}
}

func TestRunnerErrors(t *testing.T) {
	tok := tinyTok(t)
	g := &scripted{tok: tok, reply: func(string) string { return "" }}
	r, err := NewRenderer(tok, RendererOptions{Format: Plain{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg   Config
		tools []*Tool
		want  string
	}{
		{Config{NumGenerations: 0, MaxCompletionLength: 8}, []*Tool{calcTool(t)}, "num_generations 0"},
		{Config{NumGenerations: 2, MaxCompletionLength: 0}, []*Tool{calcTool(t)}, "max_completion_length 0"},
		{Config{NumGenerations: 2, MaxCompletionLength: 8, MaxToolCallingIterations: -1}, []*Tool{calcTool(t)}, "max_tool_calling_iterations -1"},
		{Config{NumGenerations: 2, MaxCompletionLength: 8}, nil, "no tools"},
		{Config{NumGenerations: 2, MaxCompletionLength: 8}, []*Tool{calcTool(t), calcTool(t)}, `two tools named "calc"`},
	} {
		_, err := NewRunner(g, r, tc.cfg, tc.tools, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestEnvReward(t *testing.T) {
	env, _ := newCounterEnv()
	env.(*counterEnv).n = 4
	s := reward.Sample{Env: env, Trajectory: RewardMessages([]tokenizer.Message{
		{Role: "assistant", Content: "", Extra: map[string]any{"text": "<call>count</call>"}},
		{Role: "tool", Content: "4", Extra: map[string]any{"name": "count"}},
		{Role: "assistant", Content: "four"},
	})}
	if got := EnvReward().Score(s); got != 4 {
		t.Errorf("EnvReward = %v, want 4", got)
	}
	if got := EnvReward().Score(reward.Sample{}); got != 0 {
		t.Errorf("EnvReward without an environment = %v, want 0", got)
	}
	if got := s.Final(); got != "four" {
		t.Errorf("Final = %q, want four", got)
	}
	if s.Trajectory[1].Name != "count" {
		t.Errorf("tool message name %q", s.Trajectory[1].Name)
	}
	if got := (reward.Sample{Completion: "x"}).Final(); got != "x" {
		t.Errorf("Final without messages = %q", got)
	}
}
