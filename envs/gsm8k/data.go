package gsm8k

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/grpokit/grpokit/reward"
)

// Example is one GSM8K problem.
type Example struct {
	Question string // the word problem
	Solution string // the worked solution, ending in "#### <answer>"
	Answer   string // the gold number: text after "#### ", commas removed ("1450000")
	Line     int    // 1-based line in the source file
}

// Load reads a GSM8K jsonl file (one {"question", "answer"} object a line).
// Blank lines are skipped. Errors name the file and line.
func Load(path string) ([]Example, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gsm8k: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}

// Read parses GSM8K jsonl from r; name labels errors (usually the file name).
func Read(r io.Reader, name string) ([]Example, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var out []Example
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var row struct {
			Question *string `json:"question"`
			Answer   *string `json:"answer"`
		}
		if err := json.Unmarshal([]byte(text), &row); err != nil {
			return nil, fmt.Errorf("gsm8k: %s:%d: invalid JSON: %w", name, line, err)
		}
		if row.Question == nil || strings.TrimSpace(*row.Question) == "" {
			return nil, fmt.Errorf("gsm8k: %s:%d: missing \"question\"", name, line)
		}
		if row.Answer == nil {
			return nil, fmt.Errorf("gsm8k: %s:%d: missing \"answer\"", name, line)
		}
		gold, err := GoldAnswer(*row.Answer)
		if err != nil {
			return nil, fmt.Errorf("gsm8k: %s:%d: %w", name, line, err)
		}
		out = append(out, Example{Question: *row.Question, Solution: *row.Answer, Answer: gold, Line: line})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("gsm8k: %s:%d: %w", name, line+1, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("gsm8k: %s: no examples", name)
	}
	return out, nil
}

// GoldAnswer returns the number after "#### " in a GSM8K solution, with
// thousands commas removed: "...\n#### 1,450,000" gives "1450000". It is an
// error when the marker is missing or what follows is not one number.
func GoldAnswer(solution string) (string, error) {
	i := strings.LastIndex(solution, "####")
	if i < 0 {
		return "", fmt.Errorf("answer has no \"#### \" marker")
	}
	gold := strings.ReplaceAll(strings.TrimSpace(solution[i+4:]), ",", "")
	if _, err := reward.ParseNumber(gold); err != nil || gold == "" {
		return "", fmt.Errorf("gold answer %q after \"####\" is not a number", gold)
	}
	return gold, nil
}
