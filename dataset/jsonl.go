package dataset

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// JSONLFields name the fields ReadJSONL reads from each line, and the
// columns LoadDataset reads from each row. Zero fields mean the defaults
// shown, which are TRL's dataset column names.
type JSONLFields struct {
	// Prompt holds a plain-text prompt, or (TRL's conversational format) a
	// list of {"role", "content"} messages. Default "prompt".
	Prompt string `json:"prompt"`
	// Messages holds a chat as a list of messages; when its last message is
	// the assistant's and the line has no answer, that message is the
	// answer and the rest the prompt. Default "messages".
	Messages string `json:"messages"`
	// Answer holds the reference answer rewards see (a string or a
	// number); optional. Default "answer".
	Answer string `json:"answer"`
}

// LoadJSONL reads a JSONL dataset file (one JSON object a line); see
// ReadJSONL. LoadDataset reads Parquet, shards and JSON arrays too.
func LoadJSONL(path string, f JSONLFields) (SliceDataset, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer file.Close()
	return ReadJSONL(file, path, f)
}

// ReadJSONL reads a dataset from r, one JSON object a line; name labels
// errors (usually the file name), which give the line. Each line needs a
// prompt or messages field. Every other field whose value is a string,
// number or boolean goes into Example.Meta under its name, as its text, so
// rewards can see it. Blank lines are skipped; an empty dataset is an error.
func ReadJSONL(r io.Reader, name string, f JSONLFields) (SliceDataset, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	var out SliceDataset
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var row map[string]json.RawMessage
		if err := json.Unmarshal(text, &row); err != nil {
			return nil, fmt.Errorf("dataset %s:%d: invalid JSON: %v", name, line, err)
		}
		ex, err := f.example(row)
		if err != nil {
			return nil, fmt.Errorf("dataset %s:%d: %w", name, line, err)
		}
		out = append(out, ex)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dataset %s:%d: %w", name, line+1, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dataset %s: no examples", name)
	}
	return out, nil
}

// example turns one row of a dataset (a JSON line, or a Parquet row as
// JSON) into an Example, as ReadJSONL describes.
func (f JSONLFields) example(row map[string]json.RawMessage) (Example, error) {
	promptKey, msgKey, answerKey := cmp.Or(f.Prompt, "prompt"), cmp.Or(f.Messages, "messages"), cmp.Or(f.Answer, "answer")
	var ex Example
	if raw, ok := row[promptKey]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			ex.Prompt = s
		} else if err := json.Unmarshal(raw, &ex.Messages); err != nil {
			return Example{}, fmt.Errorf("%q: want a string or a list of {\"role\", \"content\"} messages", promptKey)
		}
	}
	if raw, ok := row[msgKey]; ok && msgKey != promptKey {
		if err := json.Unmarshal(raw, &ex.Messages); err != nil {
			return Example{}, fmt.Errorf("%q: want a list of {\"role\", \"content\"} messages", msgKey)
		}
	}
	if raw, ok := row[answerKey]; ok {
		s, ok := scalarText(raw)
		if !ok {
			return Example{}, fmt.Errorf("%q: want a string or a number", answerKey)
		}
		ex.Answer = s
	} else if n := len(ex.Messages); n > 1 && ex.Messages[n-1].Role == "assistant" {
		ex.Answer, ex.Messages = ex.Messages[n-1].Content, ex.Messages[:n-1]
	}
	for i, m := range ex.Messages {
		if m.Role == "" {
			return Example{}, fmt.Errorf("message %d has no role", i)
		}
	}
	if strings.TrimSpace(ex.Prompt) == "" && len(ex.Messages) == 0 {
		return Example{}, fmt.Errorf("no prompt: want a %q or %q field", promptKey, msgKey)
	}
	for k, raw := range row {
		if k == promptKey || k == msgKey || k == answerKey {
			continue
		}
		if s, ok := scalarText(raw); ok {
			if ex.Meta == nil {
				ex.Meta = map[string]string{}
			}
			ex.Meta[k] = s
		}
	}
	return ex, nil
}

// scalarText returns a JSON string's value, or a number's or boolean's
// text; false for anything else.
func scalarText(raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", false
	}
	switch v.(type) {
	case float64, bool:
		return string(bytes.TrimSpace(raw)), true
	}
	return "", false
}
