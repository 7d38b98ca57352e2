package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/grpokit/grpokit/internal/regfile"
)

// ErrUnsupported is wrapped by errors about a model, normalizer,
// pre-tokenizer, post-processor or decoder type this package does not
// implement; the message names the type.
var ErrUnsupported = errors.New("unsupported type")

// ErrUnknownToken is returned when a configured token is not in the vocabulary.
var ErrUnknownToken = errors.New("unknown token")

// Codec is the text <-> ids contract shared by the pure-Go Tokenizer and the
// optional Rust backend (build tag tokenizers_rust). Implementations are
// safe for concurrent use.
type Codec interface {
	// Encode returns the ids of text. Invalid UTF-8 is first replaced with
	// U+FFFD as Rust's String::from_utf8_lossy does. addSpecialTokens applies
	// the post-processor (e.g. prepends BOS).
	Encode(text string, addSpecialTokens bool) []int
	// Decode returns the text of ids; unknown ids are skipped.
	Decode(ids []int, skipSpecialTokens bool) string
	// TokenToID looks up a token (added tokens included).
	TokenToID(token string) (int, bool)
	// VocabSize counts the model's vocabulary plus added tokens.
	VocabSize() int
}

var _ Codec = (*Tokenizer)(nil)

// Tokenizer is a pure-Go implementation of a Hugging Face tokenizer.json.
// It is safe for concurrent use.
type Tokenizer struct {
	norm    normalizer
	pre     preTokenizer
	model   model
	post    *postProcessor
	dec     decoder
	added   []AddedToken
	addedID map[int]int    // id -> index in added
	addedTk map[string]int // content -> id
	raw     *trie          // added tokens matched on the raw input
	normd   *trie          // added tokens with normalized: true
	maxID   int
}

type fileJSON struct {
	AddedTokens   []AddedToken    `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         json.RawMessage `json:"model"`
}

// FromFile reads a tokenizer.json (optionally gzip-compressed).
func FromFile(path string) (*Tokenizer, error) {
	data, err := regfile.ReadFile(path, regfile.MaxMeta)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if len(data) > 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
		}
	}
	t, err := FromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return t, nil
}

// FromJSON parses the contents of a tokenizer.json.
func FromJSON(data []byte) (*Tokenizer, error) {
	t, err := fromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return t, nil
}

func fromJSON(data []byte) (*Tokenizer, error) {
	var fj fileJSON
	if err := json.Unmarshal(data, &fj); err != nil {
		return nil, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	if isNull(fj.Model) {
		return nil, errors.New("tokenizer.json has no model")
	}
	t := &Tokenizer{addedID: map[int]int{}, addedTk: map[string]int{}}
	var err error
	if t.model, err = parseModel(fj.Model); err != nil {
		return nil, err
	}
	if t.norm, err = parseNormalizer(fj.Normalizer); err != nil {
		return nil, err
	}
	if t.pre, err = parsePreTokenizer(fj.PreTokenizer); err != nil {
		return nil, err
	}
	if t.dec, err = parseDecoder(fj.Decoder); err != nil {
		return nil, err
	}
	t.maxID = t.model.vocabSize() - 1
	t.added = fj.AddedTokens
	t.raw, t.normd = newTrie(), newTrie()
	for i, a := range t.added {
		if a.Content == "" {
			return nil, fmt.Errorf("added_tokens[%d]: empty content", i)
		}
		if a.ID < 0 {
			return nil, fmt.Errorf("added_tokens[%d] %q: negative id %d", i, a.Content, a.ID)
		}
		t.addedID[a.ID] = i
		t.addedTk[a.Content] = a.ID
		t.maxID = max(t.maxID, a.ID)
		if a.Normalized && t.norm != nil {
			t.normd.insert(t.norm.normalize(a.Content), i)
		} else {
			t.raw.insert(a.Content, i)
		}
	}
	if t.post, err = parsePostProcessor(fj.PostProcessor, t); err != nil {
		return nil, err
	}
	return t, nil
}

func parseModel(raw json.RawMessage) (model, error) {
	var head struct {
		Type   string          `json:"type"`
		Merges json.RawMessage `json:"merges"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if head.Type == "" && head.Merges != nil {
		head.Type = "BPE"
	}
	switch head.Type {
	case "BPE":
		var mj bpeJSON
		if err := json.Unmarshal(raw, &mj); err != nil {
			return nil, fmt.Errorf("model BPE: %w", err)
		}
		return newBPE(&mj)
	case "WordLevel":
		return newWordLevel(raw)
	case "":
		return nil, errors.New("model: missing type")
	}
	return nil, fmt.Errorf("model: %w %q", ErrUnsupported, head.Type)
}

// Encode returns the ids of text; see Codec.
func (t *Tokenizer) Encode(text string, addSpecialTokens bool) []int {
	text = lossyUTF8(text)
	ids := make([]int, 0, len(text)/4+4)
	var pieces [16]piece
	for i, p := range findMatches(text, t.raw, t.added, pieces[:0]) {
		if p.id >= 0 {
			ids = append(ids, p.id)
			continue
		}
		ids = t.encodeText(p.text, i == 0, ids)
	}
	if addSpecialTokens && t.post != nil {
		ids = t.post.apply(ids)
	}
	return ids
}

// encodeText runs normalizer, normalized added tokens, pre-tokenizer and
// model over one piece of text that holds no raw added token.
func (t *Tokenizer) encodeText(s string, first bool, ids []int) []int {
	if t.norm != nil {
		s = t.norm.normalize(s)
	}
	for i, p := range findMatches(s, t.normd, t.added, nil) {
		if p.id >= 0 {
			ids = append(ids, p.id)
			continue
		}
		if p.text == "" {
			continue
		}
		words := []string{p.text}
		if t.pre != nil {
			words = t.pre.preTokenize(words, first && i == 0)
		}
		for _, w := range words {
			ids = t.model.tokenize(w, ids)
		}
	}
	return ids
}

// EncodeBatch encodes texts in parallel (one goroutine per CPU).
func (t *Tokenizer) EncodeBatch(texts []string, addSpecialTokens bool) [][]int {
	out := make([][]int, len(texts))
	workers := min(runtime.GOMAXPROCS(0), len(texts))
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(texts) {
					return
				}
				out[i] = t.Encode(texts[i], addSpecialTokens)
			}
		}()
	}
	wg.Wait()
	return out
}

// Decode returns the text of ids; see Codec. Ids outside the vocabulary are
// skipped, as in Rust.
func (t *Tokenizer) Decode(ids []int, skipSpecialTokens bool) string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if k, ok := t.addedID[id]; ok {
			if skipSpecialTokens && t.added[k].Special {
				continue
			}
			toks = append(toks, t.added[k].Content)
			continue
		}
		if tok, ok := t.model.idToToken(id); ok {
			toks = append(toks, tok)
		}
	}
	if t.dec == nil {
		return strings.Join(toks, " ")
	}
	return strings.Join(t.dec.decodeChain(toks), "")
}

// TokenToID returns the id of an added or vocabulary token.
func (t *Tokenizer) TokenToID(token string) (int, bool) {
	if id, ok := t.addedTk[token]; ok {
		return id, true
	}
	return t.model.tokenToID(token)
}

// IDToToken returns the token string of id (GPT-2 byte alphabet for
// byte-level models).
func (t *Tokenizer) IDToToken(id int) (string, bool) {
	if k, ok := t.addedID[id]; ok {
		return t.added[k].Content, true
	}
	return t.model.idToToken(id)
}

// VocabSize is the largest id plus one, added tokens included.
func (t *Tokenizer) VocabSize() int { return t.maxID + 1 }

// AddedTokens returns a copy of the added tokens.
func (t *Tokenizer) AddedTokens() []AddedToken { return append([]AddedToken(nil), t.added...) }

// IsSpecial reports whether id is an added token marked special.
func (t *Tokenizer) IsSpecial(id int) bool {
	k, ok := t.addedID[id]
	return ok && t.added[k].Special
}

func isValidUTF8(s string) bool { return utf8.ValidString(s) }
