package agent

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/tokenizer"
)

func calcTool(t *testing.T) *Tool {
	t.Helper()
	return MustTool("calc", "Add or multiply two integers.", func(ctx context.Context, a calcArgs) (string, error) {
		if a.Op == "mul" {
			return itoa(a.A * a.B), nil
		}
		return itoa(a.A + a.B), nil
	})
}

// TestRendererMatchesTemplate checks, for each family, that the tokens of
// a trajectory — the rendered prompt, the model's turn, the insertion
// after it — are the tokens of the whole conversation rendered at once by
// the model's real chat template: the reference is the template itself.
func TestRendererMatchesTemplate(t *testing.T) {
	call := Call{Name: "calc", Arguments: []byte(`{"a": 3, "b": 4}`)}
	results := []Result{{Name: "calc", Content: "7"}}
	for _, tc := range []struct {
		name, fixture, tpl string
		eos                []int
		format             string
		system             bool   // the format declares tools in a system message
		turn               string // the model's turn as the template renders it
	}{
		{name: "qwen3", fixture: "qwen3", format: "hermes",
			turn: "<tool_call>\n{\"name\": \"calc\", \"arguments\": {\"a\": 3, \"b\": 4}}\n</tool_call>"},
		{name: "llama3.1", fixture: "llama31", tpl: llama31Template(t), eos: []int{128001, 128008, 128009}, format: "llama3",
			turn: `{"name": "calc", "parameters": {"a": 3, "b": 4}}`},
		{name: "gemma3", fixture: "gemma3", format: "gemma", system: true,
			turn: "```tool_code\n{\"name\": \"calc\", \"arguments\": {\"a\": 3, \"b\": 4}}\n```"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := family(t, tc.fixture, tc.tpl, tc.eos)
			r, err := NewRenderer(tok, RendererOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Format().Name() != tc.format {
				t.Fatalf("detected format %q, want %q", r.Format().Name(), tc.format)
			}
			tool := calcTool(t)
			user := tokenizer.Message{Role: "user", Content: "What is 3 + 4?"}
			promptIDs, err := r.PromptIDs(Prompt{Messages: []tokenizer.Message{user}}, []*Tool{tool})
			if err != nil {
				t.Fatal(err)
			}
			// The model's turn, ending with the template's end-of-turn token.
			turnIDs := append(tok.Tokenizer.Encode(tc.turn, false), tok.EOS[0])
			content, calls := r.Format().Parse(tc.turn)
			if len(calls) != 1 || calls[0].Err != nil || calls[0].Name != "calc" {
				t.Fatalf("parse %q: %+v", tc.turn, calls)
			}
			ins, err := r.ResultIDs(results)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Concat(promptIDs, turnIDs, ins)

			// The reference: the whole conversation, rendered by the template.
			msgs := []tokenizer.Message{user, r.Format().AssistantMessage(tc.turn, content, []Call{call})}
			msgs = append(msgs, r.Format().ResultMessages(results)...)
			opts := tokenizer.ChatOptions{AddGenerationPrompt: true}
			if tc.system {
				msgs = append([]tokenizer.Message{{Role: "system", Content: r.Format().Declare([]*Tool{tool})}}, msgs...)
			} else {
				opts.Tools = []any{tool.Spec()}
			}
			full, err := tok.ApplyChat(msgs, opts)
			if err != nil {
				t.Fatal(err)
			}
			want := tok.Tokenizer.Encode(full, false)
			if !slices.Equal(got, want) {
				t.Errorf("trajectory tokens differ from the template's rendering\n got %q\nwant %q",
					tok.Tokenizer.Decode(got, false), full)
			}
			if !strings.Contains(full, `"name": "calc"`) || !strings.Contains(full, "7") {
				t.Errorf("rendering lacks the call or result:\n%s", full)
			}
		})
	}
}

func TestRendererRejectsTemplates(t *testing.T) {
	for _, tc := range []struct {
		name, fixture string
		opts          RendererOptions
		want          string
	}{
		// The Llama 3 template of the fixture reads only role and content.
		{"llama3 plain template, llama3 format", "llama31", RendererOptions{Format: Llama3{}}, "drops the assistant's tool call"},
		{"llama3 plain template, detected", "llama31", RendererOptions{}, "no tool-call format grpokit knows"},
		// Gemma 3's template raises on a tool role.
		{"gemma3 with hermes", "gemma3", RendererOptions{Format: Hermes{}}, "Conversation roles must alternate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewRenderer(family(t, tc.fixture, "", nil), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
