package tokenizer

import (
	"encoding/json"
	"fmt"
)

// wordLevel maps whole words to ids (tokenizer.json "WordLevel").
type wordLevel struct {
	vocab  map[string]int
	vocabR []string
	unkID  int
}

func newWordLevel(raw json.RawMessage) (*wordLevel, error) {
	var mj struct {
		Vocab    map[string]int `json:"vocab"`
		UnkToken string         `json:"unk_token"`
	}
	if err := json.Unmarshal(raw, &mj); err != nil {
		return nil, fmt.Errorf("model WordLevel: %w", err)
	}
	m := &wordLevel{vocab: mj.Vocab, unkID: -1}
	n := 0
	for _, id := range mj.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("model WordLevel: negative id %d", id)
		}
		n = max(n, id+1)
	}
	m.vocabR = make([]string, n)
	for tok, id := range mj.Vocab {
		m.vocabR[id] = tok
	}
	if mj.UnkToken != "" {
		id, ok := mj.Vocab[mj.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model WordLevel: unk_token %q: %w", mj.UnkToken, ErrUnknownToken)
		}
		m.unkID = id
	}
	return m, nil
}

func (m *wordLevel) tokenize(word string, dst []int) []int {
	if id, ok := m.vocab[word]; ok {
		return append(dst, id)
	}
	if m.unkID >= 0 {
		return append(dst, m.unkID)
	}
	return dst
}

func (m *wordLevel) tokenToID(tok string) (int, bool) { id, ok := m.vocab[tok]; return id, ok }
func (m *wordLevel) vocabSize() int                   { return len(m.vocabR) }
func (m *wordLevel) idToToken(id int) (string, bool) {
	if id < 0 || id >= len(m.vocabR) {
		return "", false
	}
	return m.vocabR[id], true
}
