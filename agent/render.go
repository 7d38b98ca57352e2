package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/grpokit/grpokit/tokenizer"
)

// Prompt is what a rollout starts from: chat messages rendered with the
// model's chat template (and the tools), or for a model without a template
// plain Text.
type Prompt struct {
	Messages []tokenizer.Message
	Text     string
	// Meta is per-example data (the dataset's answer and the like), handed
	// to Environment.Reset.
	Meta map[string]string
}

// Renderer turns prompts and tool results into tokens through a model's
// own chat template: the tools go to the template's tools variable (or,
// for formats without one, to a system message), and the tokens inserted
// after a turn with calls are the template's rendering of the results.
//
// Those inserted tokens are computed as TRL's GRPOTrainer does: the
// template renders a short stand-in conversation (a user turn, an assistant
// turn with one call, the results, the generation prompt), and everything
// after the end of the assistant turn (its EOS token) is the insertion. A
// trajectory is never re-rendered: its tokens are the prompt, then exactly
// what the model generated, then the insertions, appended in order, so no
// re-tokenization can shift a boundary. Templates that rewrite earlier
// turns when later ones follow (Qwen3 drops the <think> block of assistant
// turns before the last user query) need no special template: the
// trajectory keeps the tokens the model saw and wrote, not a re-rendering
// of the whole conversation.
type Renderer struct {
	tok     *tokenizer.Pretrained
	format  Format
	vars    map[string]any
	eosText []string
}

// RendererOptions configure NewRenderer.
type RendererOptions struct {
	// Format is the tool-call format; nil detects it from the template
	// (DetectFormat).
	Format Format
	// Vars are extra chat-template variables (e.g. enable_thinking).
	Vars map[string]any
}

// sentinel values of the template checks; unlikely in any template.
const (
	sentName  = "tool_name_a8f3e2b1"
	sentKey   = "tool_arg_key_b9d4f5c2"
	sentValue = "tool_arg_val_d6e7a9f3"
	sentOut   = "tool_content_c4f9a8e2"
)

// NewRenderer checks that tok's chat template can render a tool-calling
// conversation in the format and returns a Renderer for it. Errors name
// what the template cannot do: render the tools variable, assistant
// tool_calls or tool messages (the plain Llama 3 template silently drops
// them), or end an assistant turn with an EOS token. A tokenizer without a
// chat template needs a RawFormat (Plain).
func NewRenderer(tok *tokenizer.Pretrained, opts RendererOptions) (*Renderer, error) {
	if tok == nil {
		return nil, errors.New("agent: renderer: no tokenizer")
	}
	tpl, hasTpl := tok.Templates["default"]
	f := opts.Format
	if f == nil {
		src := ""
		if hasTpl {
			src = tpl.Source()
		}
		var err error
		if f, err = DetectFormat(src); err != nil {
			return nil, err
		}
	}
	r := &Renderer{tok: tok, format: f, vars: opts.Vars}
	for _, id := range tok.EOS {
		if s, ok := tok.Tokenizer.IDToToken(id); ok {
			r.eosText = append(r.eosText, s)
		}
	}
	if _, raw := f.(RawFormat); raw {
		return r, nil
	}
	if !hasTpl {
		return nil, fmt.Errorf("agent: the tokenizer has no chat template; format %q needs one (use Plain for a model without one)", f.Name())
	}
	if len(r.eosText) == 0 {
		return nil, errors.New("agent: the tokenizer has no EOS token to end an assistant turn")
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return r, nil
}

// Format returns the renderer's tool-call format.
func (r *Renderer) Format() Format { return r.format }

// Tokenizer returns the renderer's tokenizer.
func (r *Renderer) Tokenizer() *tokenizer.Pretrained { return r.tok }

func (r *Renderer) apply(msgs []tokenizer.Message, gen bool, tools []any) (string, error) {
	return r.tok.ApplyChat(msgs, tokenizer.ChatOptions{AddGenerationPrompt: gen, Tools: tools, Vars: r.vars})
}

// check is TRL's supports_tool_calling (every part of a tool exchange must
// reach the rendered text) plus a check of the tools variable and of the
// insertion that follows a turn with calls.
func (r *Renderer) check() error {
	f := r.format
	probe := MustTool(sentName, "probe", func(_ context.Context, _ struct {
		K string `json:"tool_arg_key_b9d4f5c2"`
	}) (string, error) {
		return "", nil
	})
	user := tokenizer.Message{Role: "user", Content: "hi"}
	call := Call{Name: sentName, Arguments: []byte(`{"` + sentKey + `": "` + sentValue + `"}`)}
	callText := `{"name": "` + sentName + `", "arguments": {"` + sentKey + `": "` + sentValue + `"}}`
	asst := f.AssistantMessage(callText, "", []Call{call})
	msgs := append([]tokenizer.Message{user, asst}, f.ResultMessages([]Result{{Name: sentName, Content: sentOut}})...)
	var tools []any
	if f.NativeTools() {
		tools = []any{probe.Spec()}
	} else {
		msgs = append([]tokenizer.Message{{Role: "system", Content: f.Declare([]*Tool{probe})}}, msgs...)
	}
	out, err := r.apply(msgs, false, nil)
	if err != nil {
		return fmt.Errorf("agent: the chat template cannot render a tool-calling conversation in format %q: %w", f.Name(), err)
	}
	for _, s := range []struct{ text, what string }{
		{sentName, "the assistant's tool call (its name)"},
		{sentKey, "the tool call's arguments"},
		{sentValue, "the tool call's argument values"},
		{sentOut, "the tool result"},
	} {
		if !strings.Contains(out, s.text) {
			return fmt.Errorf("agent: the chat template drops %s: it cannot render tool calls in format %q (a plain template that reads only role and content does this)", s.what, f.Name())
		}
	}
	first := []tokenizer.Message{user}
	if !f.NativeTools() {
		first = append([]tokenizer.Message{{Role: "system", Content: f.Declare([]*Tool{probe})}}, first...)
	}
	out, err = r.apply(first, true, tools)
	if err != nil {
		return fmt.Errorf("agent: the chat template cannot render a prompt with tools: %w", err)
	}
	if !strings.Contains(out, sentName) {
		return fmt.Errorf("agent: the chat template does not render its tools variable: a prompt given a tool named %q does not mention it", sentName)
	}
	if _, err := r.insertionText([]Result{{Name: sentName, Content: sentOut}}); err != nil {
		return err
	}
	return nil
}

// PromptIDs renders a prompt with the tools declared and the generation
// prompt added, and encodes it. A raw format encodes Text (with the
// tokenizer's special tokens, e.g. BOS).
func (r *Renderer) PromptIDs(p Prompt, tools []*Tool) ([]int, error) {
	if _, raw := r.format.(RawFormat); raw {
		if p.Text == "" && len(p.Messages) == 0 {
			return nil, errors.New("agent: empty prompt")
		}
		text := p.Text
		if text == "" {
			if _, ok := r.tok.Templates["default"]; !ok {
				return nil, errors.New("agent: the prompt has messages but the model has no chat template")
			}
			s, err := r.apply(p.Messages, true, nil)
			if err != nil {
				return nil, fmt.Errorf("agent: chat template: %w", err)
			}
			return r.tok.Tokenizer.Encode(s, false), nil
		}
		return r.tok.Tokenizer.Encode(text, true), nil
	}
	if len(p.Messages) == 0 {
		return nil, errors.New("agent: the prompt has no messages (a chat template renders messages)")
	}
	msgs := append([]tokenizer.Message(nil), p.Messages...)
	var specs []any
	if r.format.NativeTools() {
		for _, t := range tools {
			specs = append(specs, t.Spec())
		}
	} else if decl := r.format.Declare(tools); decl != "" && len(tools) > 0 {
		if msgs[0].Role == "system" {
			msgs[0].Content = msgs[0].Content + "\n\n" + decl
		} else {
			msgs = append([]tokenizer.Message{{Role: "system", Content: decl}}, msgs...)
		}
	}
	s, err := r.apply(msgs, true, specs)
	if err != nil {
		return nil, fmt.Errorf("agent: chat template: %w", err)
	}
	return r.tok.Tokenizer.Encode(s, false), nil
}

// ResultIDs returns the tokens inserted after a turn that made calls: the
// template's rendering of the results and of the next generation prompt.
func (r *Renderer) ResultIDs(results []Result) ([]int, error) {
	text, err := r.insertionText(results)
	if err != nil {
		return nil, err
	}
	return r.tok.Tokenizer.Encode(text, false), nil
}

func (r *Renderer) insertionText(results []Result) (string, error) {
	if rf, raw := r.format.(RawFormat); raw {
		return rf.ResultText(results), nil
	}
	if len(results) == 0 {
		return "", errors.New("agent: no results to render")
	}
	name := results[0].Name
	if name == "" {
		name = "tool"
	}
	call := Call{Name: name, Arguments: []byte(`{"` + sentKey + `": "` + sentValue + `"}`)}
	callText := `{"name": "` + name + `", "arguments": {"` + sentKey + `": "` + sentValue + `"}}`
	msgs := []tokenizer.Message{{Role: "user", Content: "dummy"}, r.format.AssistantMessage(callText, "", []Call{call})}
	msgs = append(msgs, r.format.ResultMessages(results)...)
	out, err := r.apply(msgs, true, nil)
	if err != nil {
		return "", fmt.Errorf("agent: chat template: rendering tool results: %w", err)
	}
	at := strings.LastIndex(out, sentValue)
	if at < 0 {
		return "", errors.New("agent: chat template: the assistant's tool call is missing from its rendering")
	}
	end := -1
	eosLen := 0
	for _, e := range r.eosText {
		if k := strings.Index(out[at:], e); k >= 0 && (end < 0 || k < end) {
			end, eosLen = k, len(e)
		}
	}
	if end < 0 {
		return "", fmt.Errorf("agent: chat template: an assistant turn with a tool call does not end with an EOS token (%s)", strings.Join(quoteAll(r.eosText), ", "))
	}
	return out[at+end+eosLen:], nil
}
