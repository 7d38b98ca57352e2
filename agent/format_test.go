package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/grpokit/grpokit/internal/sharedtest"
	"github.com/grpokit/grpokit/tokenizer"
)

func TestParse(t *testing.T) {
	type want struct {
		name, args string // args: compact JSON; "" for none
		bad        string // substring of Err, "" for a good call
	}
	for _, tc := range []struct {
		f       Format
		text    string
		content string
		calls   []want
	}{
		// Qwen3's own rendering of an assistant tool call (its template:
		// '<tool_call>\n{"name": "' + name + '", "arguments": ' + tojson + '}\n</tool_call>').
		{Hermes{}, "<tool_call>\n{\"name\": \"calc\", \"arguments\": {\"a\": 3, \"b\": 4}}\n</tool_call>", "", []want{{"calc", `{"a":3,"b":4}`, ""}}},
		{Hermes{}, "<think>\nadd them\n</think>\n\nLet me add.\n<tool_call>\n{\"name\": \"calc\", \"arguments\": {\"a\": 3, \"b\": 4}}\n</tool_call>\n<tool_call>\n{\"name\": \"echo\", \"arguments\": \"{\\\"text\\\": \\\"x\\\"}\"}\n</tool_call>",
			"<think>\nadd them\n</think>\n\nLet me add.", []want{{"calc", `{"a":3,"b":4}`, ""}, {"echo", `"{\"text\": \"x\"}"`, ""}}},
		{Hermes{}, "The answer is 7.", "The answer is 7.", nil},
		{Hermes{}, "<tool_call>\n{\"name\": \"calc\", \"arguments\": {\"a\": 3,}}\n</tool_call>", "", []want{{"", "", "not JSON"}}},
		{Hermes{}, "<tool_call>\n{\"arguments\": {}}\n</tool_call>", "", []want{{"", "", `no "name"`}}},
		{Hermes{}, "<tool_call>\n[1, 2]\n</tool_call>", "", []want{{"", "", "JSON array"}}},
		{Hermes{}, "<tool_call>\n{\"name\": \"calc\", \"argu", "", []want{{"", "", "not closed"}}},
		// Llama 3.1's rendering: '{"name": "' + name + '", "parameters": ' + tojson + '}'.
		{Llama3{}, `{"name": "calc", "parameters": {"a": 3, "b": 4}}`, "", []want{{"calc", `{"a":3,"b":4}`, ""}}},
		{Llama3{}, "<|python_tag|>{\"name\": \"calc\", \"parameters\": {\"a\": 1, \"b\": 2}}", "", []want{{"calc", `{"a":1,"b":2}`, ""}}},
		{Llama3{}, `{"name": "calc", "parameters": {"a": 3, "b": 4}`, "", []want{{"", "", "not JSON"}}},
		{Llama3{}, `{"answer": 7}`, `{"answer": 7}`, nil},
		{Llama3{}, "The answer is 7.", "The answer is 7.", nil},
		{Gemma{}, "Let me compute.\n```tool_code\n{\"name\": \"calc\", \"arguments\": {\"a\": 3, \"b\": 4}}\n```", "Let me compute.", []want{{"calc", `{"a":3,"b":4}`, ""}}},
		{Gemma{}, "```tool_code\n{\"name\": \"calc\"", "", []want{{"", "", "not closed"}}},
		{Gemma{}, "7", "7", nil},
		{Plain{}, "<call>calc {\"a\": 3, \"b\": 4}</call>", "", []want{{"calc", `{"a":3,"b":4}`, ""}}},
		{Plain{}, "so <call>echo 12*34</call>", "so ", []want{{"echo", `"12*34"`, ""}}},
		{Plain{}, "<call></call>", "", []want{{"", "", "no tool name"}}},
		{Plain{}, "<call>calc 1", "", []want{{"", "", "not closed"}}},
	} {
		content, calls := tc.f.Parse(tc.text)
		if content != tc.content {
			t.Errorf("%s %q: content %q, want %q", tc.f.Name(), tc.text, content, tc.content)
		}
		if len(calls) != len(tc.calls) {
			t.Errorf("%s %q: %d calls, want %d", tc.f.Name(), tc.text, len(calls), len(tc.calls))
			continue
		}
		for i, c := range calls {
			w := tc.calls[i]
			if w.bad != "" {
				if c.Err == nil || !strings.Contains(c.Err.Error(), w.bad) {
					t.Errorf("%s %q: call %d error %v, want %q", tc.f.Name(), tc.text, i, c.Err, w.bad)
				}
				continue
			}
			if c.Err != nil {
				t.Errorf("%s %q: call %d: %v", tc.f.Name(), tc.text, i, c.Err)
				continue
			}
			if c.Name != w.name || compact(t, c.Arguments) != w.args {
				t.Errorf("%s %q: call %d = %s(%s), want %s(%s)", tc.f.Name(), tc.text, i, c.Name, c.Arguments, w.name, w.args)
			}
		}
	}
}

func compact(t *testing.T, b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// family writes a model folder for fixture name (qwen3, llama31, gemma3)
// with the chat template replaced by tpl when tpl != "", and loads it.
func family(t *testing.T, name, tpl string, eos []int) *tokenizer.Pretrained {
	t.Helper()
	familyMu.Lock()
	defer familyMu.Unlock()
	key := fmt.Sprint(name, "\x00", tpl, "\x00", eos)
	if tok, ok := familyCache[key]; ok {
		return tok
	}
	dir := t.TempDir()
	{
		sharedtest.WriteTokenizer(t, dir, name)
		if tpl != "" {
			path := filepath.Join(dir, "tokenizer_config.json")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			cfg["chat_template"] = tpl
			b, _ = json.Marshal(cfg)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if eos != nil {
			g, _ := json.Marshal(map[string]any{"eos_token_id": eos})
			if err := os.WriteFile(filepath.Join(dir, "generation_config.json"), g, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	familyCache[key] = tok
	return tok
}

// Loaded tokenizers, shared by the tests (they only read them).
var (
	familyMu    sync.Mutex
	familyCache = map[string]*tokenizer.Pretrained{}
)

func llama31Template(t *testing.T) string {
	b, err := os.ReadFile("testdata/llama3_1.jinja")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
