package agent

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/grpokit/grpokit/tokenizer"
)

// replay is a Generator that writes turn k of a script at its k-th call
// (one prompt, one generation), ending each turn with EOS.
type replay struct {
	tok   *tokenizer.Pretrained
	turns []string
	mu    sync.Mutex
	k     int
}

func (g *replay) Generate(ctx context.Context, seqs [][]int, n, maxNew int, seed uint64) ([]Turn, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := append(g.tok.Tokenizer.Encode(g.turns[g.k], false), g.tok.EOS[0])
	g.k++
	return []Turn{{IDs: ids, Stopped: true}}, nil
}

// TestDemonstrationMatchesRollout: a demonstration renders to the tokens,
// mask and messages a Runner makes when the model writes the same turns
// and the tools return the same results, for each format: a warm start on
// demonstrations trains on exactly what GRPO's rollouts will contain.
func TestDemonstrationMatchesRollout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tok     func(t *testing.T) *tokenizer.Pretrained
		format  Format
		call    func(a, b, op string) string // a call of calc in the format's syntax
		prompt  Prompt
		answer  string
		results []string
	}{
		{name: "plain", tok: tinyTok, format: Plain{},
			call: func(a, b, op string) string {
				return `<call>calc {"a": ` + a + `, "b": ` + b + `, "op": "` + op + `"}</call>`
			},
			prompt: Prompt{Text: "Q: 12*34+2="}},
		{name: "hermes", tok: func(t *testing.T) *tokenizer.Pretrained { return family(t, "qwen3", "", nil) },
			call: func(a, b, op string) string {
				return "<tool_call>\n{\"name\": \"calc\", \"arguments\": {\"a\": " + a + ", \"b\": " + b + ", \"op\": \"" + op + "\"}}\n</tool_call>"
			}},
		{name: "llama3", tok: func(t *testing.T) *tokenizer.Pretrained {
			return family(t, "llama31", llama31Template(t), []int{128001, 128008, 128009})
		}, call: func(a, b, op string) string {
			return `{"name": "calc", "parameters": {"a": ` + a + `, "b": ` + b + `, "op": "` + op + `"}}`
		}},
		{name: "gemma", tok: func(t *testing.T) *tokenizer.Pretrained { return family(t, "gemma3", "", nil) },
			call: func(a, b, op string) string {
				return "```tool_code\n{\"name\": \"calc\", \"arguments\": {\"a\": " + a + ", \"b\": " + b + ", \"op\": \"" + op + "\"}}\n```"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.tok(t)
			opts := RendererOptions{}
			if tc.format != nil {
				opts.Format = tc.format
			}
			r, err := NewRenderer(tok, opts)
			if err != nil {
				t.Fatal(err)
			}
			prompt := tc.prompt
			if prompt.Text == "" {
				prompt.Messages = []tokenizer.Message{{Role: "user", Content: "What is 12 * 34 + 2?"}}
			}
			demo := Demonstration{Prompt: prompt, Turns: []DemoTurn{
				{Text: tc.call("12", "34", "mul"), Results: []string{"408"}},
				{Text: tc.call("408", "2", "add"), Results: []string{"410"}},
				{Text: "410"},
			}}
			tools := []*Tool{calcTool(t)}
			got, err := r.Demonstration(demo, tools)
			if err != nil {
				t.Fatal(err)
			}
			texts := make([]string, len(demo.Turns))
			for i, turn := range demo.Turns {
				texts[i] = turn.Text
			}
			run, err := NewRunner(&replay{tok: tok, turns: texts}, r, Config{NumGenerations: 1, MaxCompletionLength: 4096}, tools, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := run.Rollout(context.Background(), []Prompt{prompt}, 1)
			if err != nil {
				t.Fatal(err)
			}
			want := b.Trajectories[0]
			if want.Calls != 2 || want.Failures != 0 || want.Turns != 3 {
				t.Fatalf("the rollout made %d calls (%d failed) in %d turns; the script wants 2 calls in 3 turns", want.Calls, want.Failures, want.Turns)
			}
			if !slices.Equal(got.PromptIDs, want.PromptIDs) {
				t.Errorf("prompt %q, rollout's %q", tok.Tokenizer.Decode(got.PromptIDs, false), tok.Tokenizer.Decode(want.PromptIDs, false))
			}
			if !slices.Equal(got.IDs, want.IDs) {
				t.Errorf("completion %q, rollout's %q", tok.Tokenizer.Decode(got.IDs, false), tok.Tokenizer.Decode(want.IDs, false))
			}
			if !slices.Equal(got.Mask, want.Mask) {
				t.Errorf("mask %v, rollout's %v", got.Mask, want.Mask)
			}
			if got.Turns != want.Turns || got.Calls != want.Calls {
				t.Errorf("turns %d calls %d, rollout's %d and %d", got.Turns, got.Calls, want.Turns, want.Calls)
			}
			if !reflect.DeepEqual(got.Messages, want.Messages) {
				t.Errorf("messages %+v, rollout's %+v", got.Messages, want.Messages)
			}
			if got.ModelTokens() == len(got.IDs) {
				t.Error("no token masked: the results were not inserted")
			}
		})
	}
}

// TestDemonstrationErrors: a demonstration a rollout could not produce is
// refused with the turn that breaks it.
func TestDemonstrationErrors(t *testing.T) {
	tok := tinyTok(t)
	r, err := NewRenderer(tok, RendererOptions{Format: Plain{}})
	if err != nil {
		t.Fatal(err)
	}
	call := `<call>calc {"a": 1, "b": 2}</call>`
	for _, tc := range []struct {
		name  string
		turns []DemoTurn
		want  string
	}{
		{"no turns", nil, "no turns"},
		{"last turn calls", []DemoTurn{{Text: call, Results: []string{"3"}}}, "last turn makes 1 calls"},
		{"middle turn without a call", []DemoTurn{{Text: "3"}, {Text: "3"}}, "turn 1 makes no call"},
		{"results missing", []DemoTurn{{Text: call}, {Text: "3"}}, "turn 1 makes 1 calls and has 0 results"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Demonstration(Demonstration{Prompt: Prompt{Text: "Q: 1+2="}, Turns: tc.turns}, []*Tool{calcTool(t)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
