package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/grpokit/grpokit/tokenizer"
)

// Format is how one model family writes tool calls and reads tool results.
// Hermes (Qwen2.5, Qwen3), Llama3 (Llama 3.1, 3.2), Gemma (Gemma 3, a
// convention: its template has no tool role) and Plain (the tiny models
// grpokit builds from scratch, which have no chat template) are provided;
// DetectFormat picks one from a chat template.
type Format interface {
	// Name identifies the format: "hermes", "llama3", "gemma" or "plain".
	Name() string
	// Parse finds the tool calls in the text of one assistant turn (the
	// decoded tokens, stop token excluded) and returns the text outside
	// them. A call it cannot read is returned with Call.Err set.
	Parse(text string) (content string, calls []Call)
	// NativeTools reports whether the chat template renders the tools
	// variable, assistant tool_calls and tool-role messages itself. When
	// false, Declare describes the tools in a system message and
	// AssistantMessage / ResultMessages use the roles the template knows.
	NativeTools() bool
	// Declare is the system text that describes tools when NativeTools is
	// false ("" otherwise).
	Declare(tools []*Tool) string
	// AssistantMessage is the assistant turn that made calls, as the chat
	// template should see it (text is the turn as generated).
	AssistantMessage(text, content string, calls []Call) tokenizer.Message
	// ResultMessages are the messages that carry the results back.
	ResultMessages(results []Result) []tokenizer.Message
}

// RawFormat is a Format for models without a chat template: results are
// appended to the token stream as ResultText.
type RawFormat interface {
	Format
	// ResultText is the text inserted after a turn with calls.
	ResultText(results []Result) string
}

// DetectFormat picks the format of a chat template: Hermes for templates
// that write <tool_call> (Qwen2.5, Qwen3 and other Hermes-style ones),
// Llama3 for the Llama 3.1 / 3.2 ones ("parameters" and the ipython role),
// Gemma for Gemma templates (<start_of_turn>), and an error for others
// (give the Format explicitly). An empty template is Plain.
func DetectFormat(template string) (Format, error) {
	switch {
	case strings.TrimSpace(template) == "":
		return Plain{}, nil
	case strings.Contains(template, "<tool_call>"):
		return Hermes{}, nil
	case strings.Contains(template, "ipython") && strings.Contains(template, `"parameters"`):
		return Llama3{}, nil
	case strings.Contains(template, "<start_of_turn>"):
		return Gemma{}, nil
	}
	return nil, errors.New("agent: the chat template has no tool-call format grpokit knows (Hermes <tool_call>, Llama 3.1 JSON, Gemma); give the Format explicitly")
}

// readCall decodes {"name": ..., "arguments": ...} (or "parameters", as
// Llama writes them) into a Call.
func readCall(body, raw string) Call {
	c := Call{Raw: raw}
	v, err := decodeJSON([]byte(body))
	if err != nil {
		c.Err = fmt.Errorf("the call is not JSON: %v", err)
		return c
	}
	m, ok := v.(map[string]any)
	if !ok {
		c.Err = fmt.Errorf("the call is a JSON %s, want an object with name and arguments", jsonKind(v))
		return c
	}
	name, ok := m["name"].(string)
	if !ok || name == "" {
		c.Err = errors.New(`the call has no "name" string`)
		return c
	}
	c.Name = name
	args, ok := m["arguments"]
	if !ok {
		args, ok = m["parameters"]
	}
	if ok {
		b, err := json.Marshal(args)
		if err != nil {
			c.Err = err
			return c
		}
		c.Arguments = b
	}
	return c
}

// callObject is a tool call as chat templates read assistant tool_calls.
func callObject(c Call) map[string]any {
	var args any = map[string]any{}
	if len(c.Arguments) > 0 {
		args = json.RawMessage(c.Arguments)
		if v, err := decodeJSON(c.Arguments); err == nil {
			if _, isObj := v.(map[string]any); !isObj {
				args = v
			}
		}
	}
	return map[string]any{"type": "function", "function": map[string]any{"name": c.Name, "arguments": args}}
}

// nativeMessages are the OpenAI-style messages every tool-aware template
// reads: an assistant message with tool_calls, then one tool message per
// result.
type nativeMessages struct{}

func (nativeMessages) NativeTools() bool            { return true }
func (nativeMessages) Declare(tools []*Tool) string { return "" }

func (nativeMessages) AssistantMessage(text, content string, calls []Call) tokenizer.Message {
	tc := make([]any, 0, len(calls))
	for _, c := range calls {
		if c.Err == nil {
			tc = append(tc, callObject(c))
		}
	}
	m := tokenizer.Message{Role: "assistant", Content: content}
	if len(tc) > 0 {
		m.Extra = map[string]any{"tool_calls": tc}
	}
	return m
}

func (nativeMessages) ResultMessages(results []Result) []tokenizer.Message {
	out := make([]tokenizer.Message, len(results))
	for i, r := range results {
		out[i] = tokenizer.Message{Role: "tool", Content: r.Content, Extra: map[string]any{"name": r.Name}}
	}
	return out
}

// Hermes is the format of Qwen2.5 and Qwen3 (and other Hermes-style
// templates): calls are
//
//	<tool_call>
//	{"name": "calc", "arguments": {"expr": "2+2"}}
//	</tool_call>
//
// any number per turn, results come back in tool-role messages the
// template wraps in <tool_response> tags.
type Hermes struct{ nativeMessages }

// Name returns "hermes".
func (Hermes) Name() string { return "hermes" }

// Parse reads every <tool_call>…</tool_call>; an unclosed one is a
// malformed call.
func (Hermes) Parse(text string) (string, []Call) {
	content, calls := blocks(text, "<tool_call>", "</tool_call>", func(body, raw string) Call {
		return readCall(strings.TrimSpace(body), raw)
	})
	return strings.TrimRight(content, "\n"), calls
}

// blocks finds every open…closeTag block of text and reads each with
// read (body inside the tags, raw the block as written); an unclosed last
// block is a malformed call. content is the text before the first block.
func blocks(text, open, closeTag string, read func(body, raw string) Call) (content string, calls []Call) {
	i := strings.Index(text, open)
	if i < 0 {
		return text, nil
	}
	for rest := text[i:]; ; {
		j := strings.Index(rest, open)
		if j < 0 {
			break
		}
		rest = rest[j+len(open):]
		k := strings.Index(rest, closeTag)
		if k < 0 {
			calls = append(calls, Call{Raw: open + rest, Err: fmt.Errorf("%s is not closed by %s", open, closeTag)})
			break
		}
		calls = append(calls, read(rest[:k], open+rest[:k]+closeTag))
		rest = rest[k+len(closeTag):]
	}
	return text[:i], calls
}

// Llama3 is the format of Llama 3.1 and 3.2 with their JSON tool calls:
// the whole turn is one object, {"name": "calc", "parameters": {...}}
// (optionally after <|python_tag|>); results come back in ipython-role
// messages (the template maps the tool role to ipython). One call per turn.
type Llama3 struct{ nativeMessages }

// Name returns "llama3".
func (Llama3) Name() string { return "llama3" }

// Parse reads a turn that is a JSON object as one call. A turn that starts
// like a call ({"name") but does not parse is a malformed call; any other
// text is content.
func (Llama3) Parse(text string) (string, []Call) {
	t := strings.TrimSpace(text)
	t = strings.TrimSpace(strings.TrimPrefix(t, "<|python_tag|>"))
	if !strings.HasPrefix(t, "{") {
		return text, nil
	}
	c := readCall(t, t)
	if c.Err != nil && !looksLikeCall(t) {
		return text, nil
	}
	return "", []Call{c}
}

func looksLikeCall(t string) bool {
	t = strings.TrimLeft(strings.TrimPrefix(t, "{"), " \n\t")
	return strings.HasPrefix(t, `"name"`)
}

// Gemma is a convention for Gemma 3, whose template has no tools
// variable and no tool role (its turns must alternate user/model). The
// tools are described in the system message (Gemma's template puts it at
// the head of the first user turn); the model calls one with a fenced
// block
//
//	```tool_code
//	{"name": "calc", "arguments": {"expr": "2+2"}}
//	```
//
// and the results come back as the next user turn, one block per call:
//
//	```tool_output
//	4
//	```
//
// (Gemma's function-calling guide uses these two block names.)
type Gemma struct{}

// Name returns "gemma".
func (Gemma) Name() string { return "gemma" }

// NativeTools is false: the template does not render tools.
func (Gemma) NativeTools() bool { return false }

// Declare describes the tools and the call convention.
func (Gemma) Declare(tools []*Tool) string {
	var b strings.Builder
	b.WriteString("You have access to functions. To call one, respond with a block\n```tool_code\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n```\nand nothing after it; each result comes back in a ```tool_output``` block. The functions:\n")
	for _, t := range tools {
		b.WriteString("\n")
		b.Write(t.spec)
	}
	return b.String()
}

// Parse reads every ```tool_code block; an unclosed one is a malformed call.
func (Gemma) Parse(text string) (string, []Call) {
	content, calls := blocks(text, "```tool_code", "```", func(body, raw string) Call {
		return readCall(strings.TrimSpace(body), raw)
	})
	return strings.TrimRight(content, "\n "), calls
}

// AssistantMessage is the model turn as generated.
func (Gemma) AssistantMessage(text, content string, calls []Call) tokenizer.Message {
	return tokenizer.Message{Role: "assistant", Content: text}
}

// ResultMessages is one user turn holding a ```tool_output block per result.
func (Gemma) ResultMessages(results []Result) []tokenizer.Message {
	var b strings.Builder
	for i, r := range results {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("```tool_output\n")
		b.WriteString(r.Content)
		b.WriteString("\n```")
	}
	return []tokenizer.Message{{Role: "user", Content: b.String()}}
}

// Plain is the format of models without a chat template (the tiny models
// grpokit trains from scratch): a call is
//
//	<call>calc 12*34</call>
//
// the tool name, a space, then a JSON object of arguments or, for a tool
// with a single string argument, the bare value; the model ends its turn
// (its EOS token) after the call. The results are appended as
// <result>408</result>, one per call, and generation continues.
type Plain struct{}

// Name returns "plain".
func (Plain) Name() string { return "plain" }

// NativeTools is false.
func (Plain) NativeTools() bool { return false }

// Declare returns "": a tiny model learns its tools from demonstrations.
func (Plain) Declare(tools []*Tool) string { return "" }

// Parse reads every <call>…</call>.
func (Plain) Parse(text string) (string, []Call) {
	return blocks(text, "<call>", "</call>", func(body, raw string) Call {
		c := Call{Raw: raw}
		name, args, _ := strings.Cut(strings.TrimSpace(body), " ")
		c.Name = name
		args = strings.TrimSpace(args)
		switch {
		case name == "":
			c.Err = errors.New("<call> has no tool name")
		case strings.HasPrefix(args, "{"):
			c.Arguments = json.RawMessage(args)
		case args != "":
			c.Arguments, _ = json.Marshal(args)
		}
		return c
	})
}

// AssistantMessage is the turn as generated.
func (Plain) AssistantMessage(text, content string, calls []Call) tokenizer.Message {
	return tokenizer.Message{Role: "assistant", Content: text}
}

// ResultMessages is one tool message per result.
func (Plain) ResultMessages(results []Result) []tokenizer.Message {
	return nativeMessages{}.ResultMessages(results)
}

// ResultText is <result>…</result> per result.
func (Plain) ResultText(results []Result) string {
	var b strings.Builder
	for _, r := range results {
		b.WriteString("<result>")
		b.WriteString(r.Content)
		b.WriteString("</result>")
	}
	return b.String()
}
