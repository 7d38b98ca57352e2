package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

type point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

type searchArgs struct {
	Query   string            `json:"query" desc:"what to look for"`
	Limit   int               `json:"limit,omitempty" desc:"most results"`
	Exact   bool              `json:"exact"`
	Tags    []string          `json:"tags,omitempty"`
	Mode    string            `json:"mode,omitempty" enum:"fast, thorough"`
	Origin  *point            `json:"origin"`
	Weights map[string]uint16 `json:"weights,omitempty"`
	Any     json.RawMessage   `json:"any,omitempty"`
	skipped int
	Ignored string `json:"-"`
}

// The expected schema is written out by hand in the OpenAI / Hugging Face
// function format (transformers' get_json_schema writes the same shape:
// type, then description, properties in declaration order, required).
func TestSchemaFromStruct(t *testing.T) {
	tool, err := NewTool("search", "Search the notes.", func(ctx context.Context, a searchArgs) (string, error) { return "", nil })
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"function","function":{"name":"search","description":"Search the notes.","parameters":{"type":"object","properties":{` +
		`"query":{"type":"string","description":"what to look for"},` +
		`"limit":{"type":"integer","description":"most results"},` +
		`"exact":{"type":"boolean"},` +
		`"tags":{"type":"array","items":{"type":"string"}},` +
		`"mode":{"type":"string","enum":["fast","thorough"]},` +
		`"origin":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]},` +
		`"weights":{"type":"object","additionalProperties":{"type":"integer"}},` +
		`"any":{}},` +
		`"required":["query","exact"]}}}`
	if got := string(tool.Spec()); got != want {
		t.Errorf("spec\n got %s\nwant %s", got, want)
	}
	var v any
	if err := json.Unmarshal(tool.Spec(), &v); err != nil {
		t.Fatalf("spec is not JSON: %v", err)
	}
}

func TestNewToolErrors(t *testing.T) {
	ok := func(ctx context.Context, a struct{ A int }) (string, error) { return "", nil }
	for _, tc := range []struct {
		name string
		make func() error
		want string
	}{
		{"bad name", func() error { _, err := NewTool("has space", "", ok); return err }, `tool name "has space"`},
		{"not a struct", func() error {
			_, err := NewTool("f", "", func(ctx context.Context, a int) (string, error) { return "", nil })
			return err
		}, "is not a struct"},
		{"chan field", func() error {
			_, err := NewTool("f", "", func(ctx context.Context, a struct{ C chan int }) (string, error) { return "", nil })
			return err
		}, "has no JSON Schema"},
		{"enum on int", func() error {
			_, err := NewTool("f", "", func(ctx context.Context, a struct {
				N int `enum:"1,2"`
			}) (string, error) {
				return "", nil
			})
			return err
		}, "enum tag needs a string"},
		{"duplicate tool", func() error {
			a, b := MustTool("f", "", ok), MustTool("f", "", ok)
			_, err := NewToolset(a, b)
			return err
		}, `two tools named "f"`},
	} {
		err := tc.make()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

type calcArgs struct {
	A  int    `json:"a"`
	B  int    `json:"b"`
	Op string `json:"op,omitempty" enum:"add,mul"`
}

func testTools(t *testing.T) *Toolset {
	t.Helper()
	calc := MustTool("calc", "a op b", func(ctx context.Context, a calcArgs) (string, error) {
		if a.Op == "mul" {
			return itoa(a.A * a.B), nil
		}
		return itoa(a.A + a.B), nil
	})
	echo := MustTool("echo", "echo text", func(ctx context.Context, a struct {
		Text string `json:"text"`
	}) (string, error) {
		return a.Text, nil
	})
	fail := MustTool("fail", "always fails", func(ctx context.Context, a struct{}) (string, error) {
		return "", errors.New("disk on fire")
	})
	boom := MustTool("boom", "panics", func(ctx context.Context, a struct{}) (string, error) {
		var m map[string]int
		m["x"] = 1
		return "", nil
	})
	hang := MustTool("hang", "never returns", func(ctx context.Context, a struct{}) (string, error) {
		select {} // ignores its context, as a badly written tool would
	})
	ts, err := NewToolset(calc, echo, fail, boom, hang)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestExecutor(t *testing.T) {
	ts := testTools(t)
	ex := Executor{Timeout: 200 * time.Millisecond}
	cases := []struct {
		call    Call
		content string // exact content, or for failures a substring of it
		failure error  // nil for success
	}{
		{Call{Name: "calc", Arguments: json.RawMessage(`{"a": 2, "b": 3}`)}, "5", nil},
		{Call{Name: "calc", Arguments: json.RawMessage(`{"a": 2, "b": 3, "op": "mul"}`)}, "6", nil},
		{Call{Name: "calc", Arguments: json.RawMessage(`"{\"a\": 4, \"b\": 5}"`)}, "9", nil}, // string-encoded arguments
		{Call{Name: "echo", Arguments: json.RawMessage(`"hi there"`)}, "hi there", nil},      // bare value of the one string argument
		{Call{Name: "calc", Arguments: json.RawMessage(`{"a": "2", "b": 3}`)}, `argument \"a\": want integer, got string`, &ArgumentError{}},
		{Call{Name: "calc", Arguments: json.RawMessage(`{"a": 2.5, "b": 3}`)}, `argument \"a\": want integer, got 2.5`, &ArgumentError{}},
		{Call{Name: "calc", Arguments: json.RawMessage(`{"a": 2}`)}, `argument \"b\": missing`, &ArgumentError{}},
		{Call{Name: "calc", Arguments: json.RawMessage(`{"a": 2, "b": 3, "c": 1}`)}, `argument \"c\": unknown argument`, &ArgumentError{}},
		{Call{Name: "calc", Arguments: json.RawMessage(`{"a": 2, "b": 3, "op": "div"}`)}, `\"div\" is not one of`, &ArgumentError{}},
		{Call{Name: "calc", Arguments: json.RawMessage(`[1, 2]`)}, "arguments: want object, got array", &ArgumentError{}},
		{Call{Name: "calc", Arguments: json.RawMessage(`{"a": 2,`)}, "not JSON", &ArgumentError{}},
		{Call{Name: "search", Arguments: json.RawMessage(`{}`)}, `unknown tool \"search\" (available: boom, calc, echo, fail, hang)`, ErrUnknownTool},
		{Call{Raw: "<tool_call>{", Err: errors.New("unclosed")}, "malformed tool call: unclosed", ErrMalformedCall},
		{Call{Name: "fail"}, "disk on fire", nil},
		{Call{Name: "boom"}, "tool panicked: assignment to entry in nil map", ErrToolPanicked},
		{Call{Name: "hang"}, "tool timed out after 200ms", ErrToolTimedOut},
	}
	jobs := make([]Job, len(cases))
	for i, c := range cases {
		jobs[i] = Job{Tools: ts, Call: c.call}
	}
	res := ex.Run(context.Background(), jobs)
	for i, c := range cases {
		r := res[i]
		if r.Name != c.call.Name {
			t.Errorf("case %d: name %q, want %q", i, r.Name, c.call.Name)
		}
		wantFail := c.failure != nil || strings.Contains(c.content, "disk on fire")
		if !wantFail {
			if r.Err != nil || r.Content != c.content {
				t.Errorf("case %d: got %q, %v; want %q", i, r.Content, r.Err, c.content)
			}
			continue
		}
		if r.Err == nil {
			t.Errorf("case %d: %q succeeded, want a failure", i, r.Content)
			continue
		}
		switch want := c.failure.(type) {
		case *ArgumentError:
			var ae *ArgumentError
			if !errors.As(r.Err, &ae) {
				t.Errorf("case %d: error %v is not an ArgumentError", i, r.Err)
			}
		case error:
			if !errors.Is(r.Err, want) {
				t.Errorf("case %d: error %v, want %v", i, r.Err, want)
			}
		}
		var body map[string]string
		if err := json.Unmarshal([]byte(r.Content), &body); err != nil || body["error"] == "" {
			t.Errorf("case %d: content %q is not {\"error\": ...}", i, r.Content)
		}
		if !strings.Contains(r.Content, c.content) {
			t.Errorf("case %d: content %s, want it to contain %s", i, r.Content, c.content)
		}
	}
}
