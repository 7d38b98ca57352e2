package grpo_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/grpo"
)

func TestReadJSONL(t *testing.T) {
	tests := []struct {
		name   string
		fields grpo.JSONLFields
		in     string
		want   grpo.SliceDataset
		err    string
	}{
		{"prompt and numeric answer", grpo.JSONLFields{}, `{"prompt": "2+2=", "answer": 4, "level": "easy"}` + "\n\n",
			grpo.SliceDataset{{Prompt: "2+2=", Answer: "4", Meta: map[string]string{"level": "easy"}}}, ""},
		{"renamed fields", grpo.JSONLFields{Prompt: "question", Answer: "solution"}, `{"question": "q", "solution": "s", "extra": [1]}`,
			grpo.SliceDataset{{Prompt: "q", Answer: "s"}}, ""},
		{"conversational prompt", grpo.JSONLFields{}, `{"prompt": [{"role": "user", "content": "hi"}], "answer": "yo"}`,
			grpo.SliceDataset{{Messages: []grpo.Message{{Role: "user", Content: "hi"}}, Answer: "yo"}}, ""},
		{"messages with the assistant's answer", grpo.JSONLFields{},
			`{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}`,
			grpo.SliceDataset{{Messages: []grpo.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}, Answer: "yo"}}, ""},
		{"bad JSON", grpo.JSONLFields{}, `{"prompt": "a"}` + "\n{oops", nil, "grpo: dataset d.jsonl:2: invalid JSON"},
		{"no prompt", grpo.JSONLFields{}, `{"answer": "a"}`, nil, `grpo: dataset d.jsonl:1: no prompt: want a "prompt" or "messages" field`},
		{"answer object", grpo.JSONLFields{}, `{"prompt": "p", "answer": {}}`, nil, `"answer": want a string or a number`},
		{"empty", grpo.JSONLFields{}, "\n", nil, "grpo: dataset d.jsonl: no examples"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := grpo.ReadJSONL(strings.NewReader(tc.in), "d.jsonl", tc.fields)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
