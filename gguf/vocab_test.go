package gguf

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/grpokit/grpokit/internal/sharedtest"
)

// TestPreTokenizerName: the byte-level pre-tokenizers of real tokenizers
// get llama.cpp's names for them; one llama.cpp has no name for is an
// error, not a file that tokenizes differently.
func TestPreTokenizerName(t *testing.T) {
	real := func(name string) json.RawMessage {
		var tj tokenizerJSON
		if err := json.Unmarshal(sharedtest.TokenizerJSON(t, name), &tj); err != nil {
			t.Fatal(err)
		}
		return tj.PreTokenizer
	}
	cases := []struct {
		name string
		raw  json.RawMessage
		want string // "" for an error
	}{
		{"Llama 3.1", real("llama31"), "llama-bpe"},
		{"Qwen3", real("qwen3"), "qwen2"},
		{"SmolLM2", json.RawMessage(`{"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": true}, {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}]}`), "smollm"},
		{"GPT-2", json.RawMessage(`{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}`), "gpt-2"},
		{"an unknown split", json.RawMessage(`{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Isolated"}, {"type": "ByteLevel", "use_regex": false}]}`), ""},
		{"byte level without a split", json.RawMessage(`{"type": "ByteLevel", "use_regex": false}`), ""},
	}
	for _, c := range cases {
		got, err := preTokenizerName(c.raw)
		switch {
		case c.want == "" && !errors.Is(err, ErrUnsupported):
			t.Errorf("%s: %q, %v; want an ErrUnsupported", c.name, got, err)
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}
