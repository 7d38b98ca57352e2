package gsm8k

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/internal/sharedtest"
)

// sharedDir returns ../shared/data/gsm8k, or skips the test.
func sharedDir(t *testing.T) string { return sharedtest.Dir(t, "data", "gsm8k") }

func TestLoadShared(t *testing.T) {
	dir := sharedDir(t)
	tests := []struct {
		file      string
		n         int
		firstGold string
		firstQ    string
	}{
		{"train.jsonl", 7473, "72", "Natalia sold clips"},
		{"test.jsonl", 1319, "18", "Janet’s ducks lay 16 eggs"},
	}
	for _, tc := range tests {
		exs, err := Load(filepath.Join(dir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if len(exs) != tc.n || exs[0].Answer != tc.firstGold || !strings.HasPrefix(exs[0].Question, tc.firstQ) || exs[0].Line != 1 {
			t.Errorf("%s: %d examples, first %+v", tc.file, len(exs), exs[0])
		}
		for _, ex := range exs {
			if strings.Contains(ex.Answer, ",") {
				t.Errorf("%s:%d: gold %q keeps a comma", tc.file, ex.Line, ex.Answer)
			}
		}
	}
}

func TestGoldAnswer(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"He pays 5\n#### 72", "72", ""},
		{"#### 1,450,000", "1450000", ""},
		{"#### -10", "-10", ""},
		{"x\n####  7 \n", "7", ""},
		{"no marker", "", `answer has no "#### " marker`},
		{"#### seven", "", `gold answer "seven" after "####" is not a number`},
		{"####", "", `gold answer "" after "####" is not a number`},
	}
	for _, tc := range tests {
		got, err := GoldAnswer(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("GoldAnswer(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("GoldAnswer(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestReadErrors(t *testing.T) {
	good := `{"question": "q", "answer": "a\n#### 1"}`
	tests := []struct{ name, in, err string }{
		{"bad json", good + "\n{oops\n", "gsm8k: f.jsonl:2: invalid JSON: "},
		{"no question", good + "\n\n" + `{"answer": "#### 1"}`, `gsm8k: f.jsonl:3: missing "question"`},
		{"no answer", `{"question": "q"}`, `gsm8k: f.jsonl:1: missing "answer"`},
		{"no marker", `{"question": "q", "answer": "42"}`, `gsm8k: f.jsonl:1: answer has no "#### " marker`},
		{"bad gold", `{"question": "q", "answer": "#### 4 2"}`, `gsm8k: f.jsonl:1: gold answer "4 2" after "####" is not a number`},
		{"empty", "\n\n", "gsm8k: f.jsonl: no examples"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.in), "f.jsonl")
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("error = %v, want prefix %q", err, tc.err)
			}
		})
	}
	exs, err := Read(strings.NewReader("\n"+good+"\n"), "f.jsonl")
	if err != nil || len(exs) != 1 || exs[0].Line != 2 || exs[0].Answer != "1" || exs[0].Question != "q" {
		t.Errorf("Read(good) = %+v, %v", exs, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil ||
		!strings.HasPrefix(err.Error(), "gsm8k: open ") || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("Load(missing) error = %v", err)
	}
}

func TestPrompt(t *testing.T) {
	m := Chat("What is 2+2?")
	if len(m) != 2 || m[0].Role != "system" || m[0].Content != SystemPrompt || m[1] != (Message{"user", "What is 2+2?"}) {
		t.Errorf("Chat = %+v", m)
	}
	want := "Respond in the following format:\n<reasoning>\n...\n</reasoning>\n<answer>\n...\n</answer>\n\nQuestion: What is 2+2?\n"
	if got := Prompt("What is 2+2?"); got != want {
		t.Errorf("Prompt = %q, want %q", got, want)
	}
}
