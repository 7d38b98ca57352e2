package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
)

// Tool is a function the model may call: a name, a description, the JSON
// Schema of its arguments (derived from a Go struct) and the Go function
// that runs it. Build one with NewTool. A Tool is immutable and safe for
// concurrent use when its function is.
type Tool struct {
	name, desc string
	params     *schema
	spec       json.RawMessage
	call       func(ctx context.Context, args json.RawMessage) (string, error)
	single     string // the one string property, for a bare-string call; "" if none
}

var toolName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)

// NewTool makes a tool named name from fn. Args must be a struct (or a
// pointer to one); its exported fields are the tool's arguments:
//
//	type CalcArgs struct {
//		Expr string `json:"expr" desc:"an arithmetic expression, e.g. 12*(3+4)"`
//		Precision int `json:"precision,omitempty" desc:"decimal places"`
//		Mode string `json:"mode,omitempty" enum:"exact,float"`
//	}
//
// Field names come from the json tag, descriptions from the desc tag, and a
// string field may list its allowed values in an enum tag (comma-separated).
// A field is required unless its json tag says omitempty (or omitzero) or
// it is a pointer. Strings, booleans, integers, floats, slices, arrays,
// string-keyed maps, nested structs, pointers and json.RawMessage (any
// value) are supported. The arguments a model sends are checked against
// this schema (types, required fields, unknown names, enums) before fn
// runs; a mismatch is a tool error the model sees.
func NewTool[Args any](name, desc string, fn func(ctx context.Context, args Args) (string, error)) (*Tool, error) {
	if !toolName.MatchString(name) {
		return nil, fmt.Errorf("agent: tool name %q: want letters, digits, _ . - (starting with a letter or _), at most 64", name)
	}
	if fn == nil {
		return nil, fmt.Errorf("agent: tool %q: nil function", name)
	}
	t := reflect.TypeFor[Args]()
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct {
		return nil, fmt.Errorf("agent: tool %q: arguments type %s is not a struct", name, t)
	}
	params, err := schemaOf(st, map[reflect.Type]bool{})
	if err != nil {
		return nil, fmt.Errorf("agent: tool %q: %w", name, err)
	}
	params.Nullable = false
	tool := &Tool{name: name, desc: desc, params: params}
	if len(params.Props) == 1 && params.Props[0].Schema.Type == "string" && len(params.Props[0].Schema.Enum) == 0 {
		tool.single = params.Props[0].Name
	}
	tool.call = func(ctx context.Context, raw json.RawMessage) (string, error) {
		var args Args
		if t.Kind() == reflect.Pointer {
			args = reflect.New(st).Interface().(Args)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&args); err != nil {
			return "", &ArgumentError{Tool: name, Err: err}
		}
		return fn(ctx, args)
	}
	if tool.spec, err = tool.marshalSpec(); err != nil {
		return nil, fmt.Errorf("agent: tool %q: %w", name, err)
	}
	return tool, nil
}

// MustTool is NewTool for tools declared at package level; it panics on
// the errors NewTool returns (a bad name or arguments type).
func MustTool[Args any](name, desc string, fn func(ctx context.Context, args Args) (string, error)) *Tool {
	t, err := NewTool(name, desc, fn)
	if err != nil {
		panic(err)
	}
	return t
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.name }

// Description returns the tool's description.
func (t *Tool) Description() string { return t.desc }

// Parameters returns the JSON Schema of the arguments.
func (t *Tool) Parameters() json.RawMessage {
	b, _ := json.Marshal(t.params)
	return b
}

// Spec returns the tool in the OpenAI / Hugging Face function format that
// chat templates render from their tools variable:
// {"type": "function", "function": {"name", "description", "parameters"}}.
func (t *Tool) Spec() json.RawMessage { return append(json.RawMessage(nil), t.spec...) }

func (t *Tool) marshalSpec() (json.RawMessage, error) {
	params, err := json.Marshal(t.params)
	if err != nil {
		return nil, err
	}
	name, _ := json.Marshal(t.name)
	desc, _ := json.Marshal(t.desc)
	var b bytes.Buffer
	b.WriteString(`{"type":"function","function":{"name":`)
	b.Write(name)
	b.WriteString(`,"description":`)
	b.Write(desc)
	b.WriteString(`,"parameters":`)
	b.Write(params)
	b.WriteString(`}}`)
	return b.Bytes(), nil
}

// ArgumentError is a call whose arguments do not fit the tool's schema.
type ArgumentError struct {
	Tool string
	Err  error
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("tool %q: bad arguments: %v", e.Tool, e.Err)
}
func (e *ArgumentError) Unwrap() error { return e.Err }

// ErrUnknownTool is a call of a tool the model was not given.
var ErrUnknownTool = errors.New("unknown tool")

// normalizeArgs turns a call's arguments into a JSON object that fits the
// schema, or says why it cannot: missing arguments are {}, a JSON string
// holding an object is that object (OpenAI's string-encoded arguments),
// and another string is the value of a tool's single string argument.
func (t *Tool) normalizeArgs(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, &ArgumentError{Tool: t.name, Err: fmt.Errorf("not JSON: %w", err)}
	}
	if s, ok := v.(string); ok {
		trimmed := strings.TrimSpace(s)
		if inner, err := decodeJSON([]byte(trimmed)); err == nil && strings.HasPrefix(trimmed, "{") {
			v, raw = inner, json.RawMessage(trimmed)
		} else if t.single != "" {
			b, _ := json.Marshal(map[string]string{t.single: s})
			return b, nil
		}
	}
	if err := t.params.check(v, ""); err != nil {
		return nil, &ArgumentError{Tool: t.name, Err: err}
	}
	return raw, nil
}
