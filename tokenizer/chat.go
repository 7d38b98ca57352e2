package tokenizer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// ErrTemplateRaised wraps the message of a template's raise_exception(...).
var ErrTemplateRaised = errors.New("template raised an exception")

// Message is one chat turn. Extra holds further fields a template may read
// (for example "reasoning_content" or "tool_calls"); give it JSON-like
// values, and json.RawMessage where key order matters.
type Message struct {
	Role    string
	Content string
	Extra   map[string]any
}

// ChatOptions are the variables besides messages. The zero value renders
// without a generation prompt, tools or extra variables.
type ChatOptions struct {
	// AddGenerationPrompt appends the assistant header.
	AddGenerationPrompt bool
	// Tools are JSON-schema tool definitions (any JSON-marshalable value,
	// json.RawMessage to keep key order); nil means no "tools" variable.
	Tools []any
	// Vars are extra template variables, e.g. {"enable_thinking": false},
	// "bos_token" and "eos_token".
	Vars map[string]any
}

// ChatTemplate is a compiled Jinja chat template (tokenizer_config.json's
// chat_template), rendered with Python/transformers semantics: trim_blocks
// and lstrip_blocks on, tojson with Python separators and insertion order,
// raise_exception and strftime_now available. Every render is bounded by
// RenderLimits (DefaultRenderLimits unless WithLimits sets others), and
// include, import, extends and from are not available (transformers'
// renderer has no loader either). Safe for concurrent use.
type ChatTemplate struct {
	src  string
	name string // the file the template came from, for errors
	lim  RenderLimits
	tpl  *exec.Template
}

// NewChatTemplate compiles src.
func NewChatTemplate(src string) (*ChatTemplate, error) {
	return compileChatTemplate(src, "", RenderLimits{})
}

// WithLimits returns a copy of c that renders under lim (zero fields take
// DefaultRenderLimits' values).
func (c *ChatTemplate) WithLimits(lim RenderLimits) (*ChatTemplate, error) {
	return compileChatTemplate(c.src, c.name, lim)
}

// Limits returns the limits c renders under.
func (c *ChatTemplate) Limits() RenderLimits { return c.lim }

// what names the template in errors.
func (c *ChatTemplate) what() string {
	if c.name == "" {
		return "chat template"
	}
	return "chat template in " + c.name
}

func compileChatTemplate(src, name string, lim RenderLimits) (ct *ChatTemplate, err error) {
	lim = lim.withDefaults()
	what := (&ChatTemplate{name: name}).what()
	defer func() {
		if r := recover(); r != nil {
			ct, err = nil, fmt.Errorf("tokenizer: %s: parse: panic: %v", what, r)
		}
	}()
	if err := checkNesting(src); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: parse: %w", what, err)
	}
	rewritten := rewriteInlineIf(src)
	sum := sha256.Sum256([]byte(src))
	id := "chat-" + hex.EncodeToString(sum[:8])
	fsl, err := loaders.NewFileSystemLoader("")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: chat template: %w", err)
	}
	loader, err := loaders.NewShiftedLoader(id, bytes.NewReader([]byte(rewritten)), fsl)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: chat template: %w", err)
	}
	tpl, err := exec.NewTemplate(id, templateConfig(), loader, templateEnv(lim))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: parse: %w", what, err)
	}
	instrument(tpl.Root())
	return &ChatTemplate{src: src, name: name, lim: lim, tpl: tpl}, nil
}

// Source returns the template text.
func (c *ChatTemplate) Source() string { return c.src }

// Apply renders messages with opts.
func (c *ChatTemplate) Apply(messages []Message, opts ChatOptions) (string, error) {
	vars := map[string]any{}
	for k, v := range opts.Vars {
		tv, err := toTemplateValue(v)
		if err != nil {
			return "", fmt.Errorf("tokenizer: chat template: variable %q: %w", k, err)
		}
		vars[k] = tv
	}
	msgs := make([]any, len(messages))
	for i, m := range messages {
		d := exec.NewDict()
		d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue("role"), Value: exec.AsValue(m.Role)},
			&exec.Pair{Key: exec.AsValue("content"), Value: exec.AsValue(m.Content)})
		extra, err := toTemplateValue(m.Extra)
		if err != nil {
			return "", fmt.Errorf("tokenizer: chat template: message %d: %w", i, err)
		}
		if ed, ok := extra.(*exec.Dict); ok {
			d.Pairs = append(d.Pairs, ed.Pairs...)
		}
		msgs[i] = d
	}
	vars["messages"] = msgs
	vars["add_generation_prompt"] = opts.AddGenerationPrompt
	if opts.Tools != nil {
		tools, err := toTemplateValue(opts.Tools)
		if err != nil {
			return "", fmt.Errorf("tokenizer: chat template: tools: %w", err)
		}
		vars["tools"] = tools
	}
	return c.render(vars)
}

// Render renders with raw variables. Values are converted through JSON
// (structs keep field order, Go maps get sorted keys, json.RawMessage keeps
// its own order).
func (c *ChatTemplate) Render(vars map[string]any) (string, error) {
	ctx := map[string]any{}
	for k, v := range vars {
		tv, err := toTemplateValue(v)
		if err != nil {
			return "", fmt.Errorf("tokenizer: chat template: variable %q: %w", k, err)
		}
		ctx[k] = tv
	}
	return c.render(ctx)
}

// RenderJSON renders with the variables of a JSON object, keeping the key
// order of every object (what tojson prints).
func (c *ChatTemplate) RenderJSON(ctxJSON []byte) (string, error) {
	v, err := parseOrderedJSON(ctxJSON)
	if err != nil {
		return "", fmt.Errorf("tokenizer: chat template: context: %w", err)
	}
	d, ok := v.(*exec.Dict)
	if !ok {
		return "", errors.New("tokenizer: chat template: context: want a JSON object")
	}
	ctx := map[string]any{}
	for _, p := range d.Pairs {
		ctx[p.Key.String()] = p.Value.Interface()
	}
	return c.render(ctx)
}

func (c *ChatTemplate) render(vars map[string]any) (out string, err error) {
	state := newRenderState(c.lim)
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("tokenizer: %s: render: panic: %v", c.what(), r)
		}
	}()
	vars[stateKey] = state
	var b strings.Builder
	err = c.tpl.Execute(&limitedWriter{w: &b, s: state}, exec.NewContext(vars))
	if state.err != nil {
		return "", fmt.Errorf("tokenizer: %s: render stopped: %w", c.what(), state.err)
	}
	if err != nil {
		if msg, ok := limitMessage(err); ok {
			return "", fmt.Errorf("tokenizer: %s: render stopped: %w: %s", c.what(), ErrRenderLimit, msg)
		}
		if msg, ok := raisedMessage(err); ok {
			return "", fmt.Errorf("tokenizer: %s: %w: %s", c.what(), ErrTemplateRaised, msg)
		}
		return "", fmt.Errorf("tokenizer: %s: render: %w", c.what(), err)
	}
	return b.String(), nil
}

const raisePrefix = "raise_exception: "

// raisedMessage digs the raise_exception message out of gonja's error text.
func raisedMessage(err error) (string, bool) {
	s := err.Error()
	i := strings.Index(s, raisePrefix)
	if i < 0 {
		return "", false
	}
	msg := s[i+len(raisePrefix):]
	if j := strings.Index(msg, "\x00"); j >= 0 {
		msg = msg[:j]
	}
	return msg, true
}

func templateConfig() *config.Config {
	cfg := config.New()
	cfg.TrimBlocks = true // as transformers' ImmutableSandboxedEnvironment
	cfg.LeftStripBlocks = true
	return cfg
}

func templateEnv(lim RenderLimits) *exec.Environment {
	filters := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	_ = filters.Replace("tojson", filterToJSON)
	for _, name := range builtinFilterNames {
		if f, ok := filters.Get(name); ok {
			_ = filters.Replace(name, limitFilter(name, f))
		}
	}
	for name, f := range guardFilters() {
		_ = filters.Register(name, f)
	}
	ctx := exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables)
	ctx.Set("range", limitedRange)
	ctx.Set("lipsum", func(_ *exec.Evaluator, params *exec.VarArgs) *exec.Value {
		return exec.AsValue(errors.New("lipsum is not available in chat templates"))
	})
	// Functions return *exec.Value: gonja treats any other value with an
	// Error method as a failed call.
	ctx.Set("raise_exception", func(_ *exec.Evaluator, params *exec.VarArgs) *exec.Value {
		msg := ""
		if len(params.Args) > 0 {
			msg = params.Args[0].String()
		}
		return exec.AsValue(errors.New(raisePrefix + msg + "\x00"))
	})
	ctx.Set("strftime_now", func(_ *exec.Evaluator, params *exec.VarArgs) *exec.Value {
		if len(params.Args) != 1 || !params.Args[0].IsString() {
			return exec.AsValue(errors.New("strftime_now: want one format string"))
		}
		return exec.AsValue(strftime(time.Now(), params.Args[0].String()))
	})
	ctx.Set(condFunc, func(_ *exec.Evaluator, params *exec.VarArgs) *exec.Value {
		if len(params.Args) != 3 {
			return exec.AsValue(errors.New("inline if: internal error"))
		}
		if params.Args[0].IsTrue() {
			return params.Args[1]
		}
		return params.Args[2]
	})
	return &exec.Environment{
		Context:           ctx,
		Filters:           filters,
		Tests:             builtins.Tests,
		ControlStructures: controlStructureSet(),
		Methods:           limitedMethods(lim.MaxOutputBytes),
	}
}

// toTemplateValue converts a Go value to what the template sees, through
// JSON so that objects become ordered dicts.
func toTemplateValue(v any) (any, error) {
	switch v := v.(type) {
	case nil, string, bool, int, int64, float64:
		return v, nil
	case json.RawMessage:
		return parseOrderedJSON(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return parseOrderedJSON(b)
}
