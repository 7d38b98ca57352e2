package dataset_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/dataset"
)

func TestReadJSONL(t *testing.T) {
	tests := []struct {
		name   string
		fields dataset.JSONLFields
		in     string
		want   dataset.SliceDataset
		err    string
	}{
		{"prompt and numeric answer", dataset.JSONLFields{}, `{"prompt": "2+2=", "answer": 4, "level": "easy"}` + "\n\n",
			dataset.SliceDataset{{Prompt: "2+2=", Answer: "4", Meta: map[string]string{"level": "easy"}}}, ""},
		{"renamed fields", dataset.JSONLFields{Prompt: "question", Answer: "solution"}, `{"question": "q", "solution": "s", "extra": [1]}`,
			dataset.SliceDataset{{Prompt: "q", Answer: "s"}}, ""},
		{"conversational prompt", dataset.JSONLFields{}, `{"prompt": [{"role": "user", "content": "hi"}], "answer": "yo"}`,
			dataset.SliceDataset{{Messages: []dataset.Message{{Role: "user", Content: "hi"}}, Answer: "yo"}}, ""},
		{"messages with the assistant's answer", dataset.JSONLFields{},
			`{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}`,
			dataset.SliceDataset{{Messages: []dataset.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}, Answer: "yo"}}, ""},
		{"bad JSON", dataset.JSONLFields{}, `{"prompt": "a"}` + "\n{oops", nil, "dataset d.jsonl:2: invalid JSON"},
		{"no prompt", dataset.JSONLFields{}, `{"answer": "a"}`, nil, `dataset d.jsonl:1: no prompt: want a "prompt" or "messages" field`},
		{"answer object", dataset.JSONLFields{}, `{"prompt": "p", "answer": {}}`, nil, `"answer": want a string or a number`},
		{"empty", dataset.JSONLFields{}, "\n", nil, "dataset d.jsonl: no examples"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dataset.ReadJSONL(strings.NewReader(tc.in), "d.jsonl", tc.fields)
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
