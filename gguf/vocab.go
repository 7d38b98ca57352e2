package gguf

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/grpokit/grpokit/tokenizer"
)

// Token types of tokenizer.ggml.token_type (llama.cpp's llama_token_attr
// numbering as gguf-py's TokenType writes it).
const (
	tokenNormal      int32 = 1
	tokenUnknown     int32 = 2
	tokenControl     int32 = 3
	tokenUserDefined int32 = 4
	tokenUnused      int32 = 5
	tokenByte        int32 = 6
)

// Vocab is what a GGUF file says about the tokenizer: the tokenizer.*
// keys. Make one with NewVocab from a Hugging Face tokenizer, or
// PlaceholderVocab for a model folder that has none.
type Vocab struct {
	// Model is tokenizer.ggml.model: "gpt2" (byte-level BPE with merges:
	// Llama 3, Qwen, SmolLM) or "llama" (SentencePiece-style BPE with byte
	// fallback and scores: Gemma).
	Model string
	// Pre is tokenizer.ggml.pre, llama.cpp's name for the pre-tokenizer
	// ("llama-bpe", "qwen2", "smollm", "gpt-2", "default").
	Pre string
	// Tokens, Types and (for "llama") Scores are indexed by token id;
	// Merges (for "gpt2") are "left right" in rank order.
	Tokens []string
	Types  []int32
	Scores []float32
	Merges []string
	// BOS, EOS, PAD and UNK are token ids, -1 when the tokenizer has none.
	BOS, EOS, PAD, UNK int
	// AddBOS is whether encoding a text puts BOS first (add_special_tokens).
	AddBOS bool
	// AddSpacePrefix is SentencePiece's add_dummy_prefix ("llama" only).
	AddSpacePrefix bool
	// ChatTemplate is the Jinja chat template ("" if none).
	ChatTemplate string
	// Placeholder marks a vocabulary made up to fill the file (no tokenizer):
	// the model runs from token ids, but text means nothing to it.
	Placeholder bool
}

// tokenizerJSON is the part of tokenizer.json that decides how llama.cpp
// has to tokenize.
type tokenizerJSON struct {
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        struct {
		Type         string          `json:"type"`
		ByteFallback bool            `json:"byte_fallback"`
		UnkToken     *string         `json:"unk_token"`
		Merges       json.RawMessage `json:"merges"`
	} `json:"model"`
}

// Pre-tokenizer regular expressions of tokenizer.json, by the name
// llama.cpp gives the pre-tokenizer (llama-vocab.cpp's LLAMA_VOCAB_PRE_TYPE
// names, as convert_hf_to_gguf.py writes them).
var preTokenizers = map[string]string{
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`: "llama-bpe",
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:      "qwen2",
}

// preStep is one step of tokenizer.json's pre_tokenizer.
type preStep struct {
	Type    string `json:"type"`
	Pattern struct {
		Regex string `json:"Regex"`
	} `json:"pattern"`
	IndividualDigits bool      `json:"individual_digits"`
	UseRegex         bool      `json:"use_regex"`
	Pretokenizers    []preStep `json:"pretokenizers"`
}

// preTokenizerName returns llama.cpp's name for a byte-level
// pre-tokenizer: a Split by a regular expression llama.cpp knows (Llama 3,
// Qwen2), GPT-2's (ByteLevel with its own regular expression), or
// SmolLM's (single digits, then GPT-2's). Others are an error: llama.cpp
// would split the text differently.
func preTokenizerName(raw json.RawMessage) (string, error) {
	var top preStep
	if err := json.Unmarshal(raw, &top); err != nil {
		return "", fmt.Errorf("gguf: tokenizer.json: pre_tokenizer: %w", err)
	}
	steps := []preStep{top}
	if top.Type == "Sequence" {
		steps = top.Pretokenizers
	}
	var digits, gpt2 bool
	for _, s := range steps {
		switch s.Type {
		case "Split":
			if name, ok := preTokenizers[s.Pattern.Regex]; ok && len(steps) == 2 {
				return name, nil
			}
		case "Digits":
			digits = s.IndividualDigits
		case "ByteLevel":
			gpt2 = s.UseRegex
		}
	}
	switch {
	case gpt2 && digits && len(steps) == 2:
		return "smollm", nil
	case gpt2 && len(steps) == 1:
		return "gpt-2", nil
	}
	return "", fmt.Errorf("%w: tokenizer.json: a byte-level pre-tokenizer llama.cpp has no name for (%.300s)", ErrUnsupported, raw)
}

// NewVocab describes tok, whose tokenizer.json holds tokJSON, for a model
// of vocabSize embedding rows (ids past the tokenizer's are padded as
// unused "[PADn]" tokens, as llama.cpp's converter does). It is an error
// for a tokenizer llama.cpp cannot reproduce: not BPE, or BPE that is
// neither byte-level nor SentencePiece-style with byte fallback.
func NewVocab(tok *tokenizer.Pretrained, tokJSON []byte, vocabSize int) (*Vocab, error) {
	var tj tokenizerJSON
	if err := json.Unmarshal(tokJSON, &tj); err != nil {
		return nil, fmt.Errorf("gguf: tokenizer.json: %w", err)
	}
	if tj.Model.Type != "BPE" && tj.Model.Type != "" {
		return nil, fmt.Errorf("gguf: tokenizer.json: model type %q: only BPE tokenizers can be written to GGUF here", tj.Model.Type)
	}
	t := tok.Tokenizer
	n := t.VocabSize()
	if n > vocabSize {
		return nil, fmt.Errorf("gguf: the tokenizer has %d tokens but the model only %d embedding rows (vocab_size): the tokenizer belongs to another model", n, vocabSize)
	}
	v := &Vocab{BOS: tok.BOS, EOS: -1, PAD: -1, UNK: -1}
	if len(tok.EOS) > 0 {
		v.EOS = tok.EOS[0]
	}
	if tok.PADToken != "" {
		v.PAD = tok.PAD
	}
	pre := string(tj.PreTokenizer)
	switch {
	case strings.Contains(pre, `"ByteLevel"`):
		v.Model = "gpt2"
		name, err := preTokenizerName(tj.PreTokenizer)
		if err != nil {
			return nil, err
		}
		v.Pre = name
		merges, err := parseMerges(tj.Model.Merges)
		if err != nil {
			return nil, err
		}
		v.Merges = merges
	case tj.Model.ByteFallback:
		v.Model, v.Pre = "llama", "default"
		// SentencePiece's dummy prefix: a Prepend("▁") normalizer (Llama 2
		// style) or a Metaspace pre-tokenizer that always prepends.
		compact := strings.ReplaceAll(pre, " ", "")
		v.AddSpacePrefix = strings.Contains(string(tj.Normalizer), `"Prepend"`) ||
			strings.Contains(compact, `"Metaspace"`) && strings.Contains(compact, `"prepend_scheme":"always"`)
		merges, err := parseMerges(tj.Model.Merges)
		if err != nil {
			return nil, err
		}
		v.Scores = make([]float32, vocabSize)
		for i := range v.Scores {
			v.Scores[i] = -1e9
		}
		// llama.cpp's SentencePiece tokenizer merges the adjacent pair whose
		// concatenation has the highest score; BPE merges the pair of lowest
		// rank. Scoring each token by minus the rank of the first merge that
		// makes it gives the same order.
		for rank, m := range merges {
			l, r, _ := strings.Cut(m, " ")
			if id, ok := t.TokenToID(l + r); ok && v.Scores[id] == -1e9 {
				v.Scores[id] = -float32(rank)
			}
		}
	default:
		return nil, errors.New("gguf: tokenizer.json: a BPE tokenizer that is neither byte-level nor SentencePiece-style with byte_fallback; llama.cpp has no tokenizer for it")
	}
	if tj.Model.UnkToken != nil {
		if id, ok := t.TokenToID(*tj.Model.UnkToken); ok {
			v.UNK = id
		}
	}
	added := map[int]tokenizer.AddedToken{}
	for _, a := range t.AddedTokens() {
		added[a.ID] = a
	}
	v.Tokens = make([]string, vocabSize)
	v.Types = make([]int32, vocabSize)
	for id := range vocabSize {
		s, ok := t.IDToToken(id)
		switch a, isAdded := added[id]; {
		case !ok:
			v.Tokens[id], v.Types[id] = fmt.Sprintf("[PAD%d]", id), tokenUnused
		case id == v.UNK:
			v.Tokens[id], v.Types[id] = s, tokenUnknown
		case isAdded && a.Special:
			v.Tokens[id], v.Types[id] = s, tokenControl
		case isAdded:
			v.Tokens[id], v.Types[id] = s, tokenUserDefined
		case v.Model == "llama" && isByteToken(s):
			v.Tokens[id], v.Types[id] = s, tokenByte
		default:
			v.Tokens[id], v.Types[id] = s, tokenNormal
		}
	}
	// add_bos: what encoding with special tokens does, as the tokenizer
	// itself does it.
	if ids := t.Encode("a", true); v.BOS >= 0 && len(ids) > 0 && ids[0] == v.BOS {
		v.AddBOS = true
	}
	if ct, ok := tok.Templates["default"]; ok {
		v.ChatTemplate = ct.Source()
	}
	return v, nil
}

// isByteToken reports whether s is a byte-fallback token "<0xXX>".
func isByteToken(s string) bool {
	const hex = "0123456789ABCDEF"
	return len(s) == 6 && strings.HasPrefix(s, "<0x") && s[5] == '>' &&
		strings.IndexByte(hex, s[3]) >= 0 && strings.IndexByte(hex, s[4]) >= 0
}

// parseMerges reads tokenizer.json's merges, written as "a b" strings or
// as ["a", "b"] pairs, into the "a b" form GGUF stores.
func parseMerges(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		return strs, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("gguf: tokenizer.json: merges: %w", err)
	}
	out := make([]string, len(pairs))
	for i, p := range pairs {
		if strings.Contains(p[0], " ") || strings.Contains(p[1], " ") {
			return nil, fmt.Errorf("gguf: tokenizer.json: merge %d (%q, %q) holds a space, which GGUF's \"left right\" merges cannot", i, p[0], p[1])
		}
		out[i] = p[0] + " " + p[1]
	}
	return out, nil
}

// PlaceholderVocab is a made-up vocabulary of vocabSize tokens for a model
// folder without a tokenizer: ids bos, eos and pad (each -1 for none) are
// control tokens "<s>", "</s>" and "<pad>", ids 3 to 258 (when the vocabulary
// is that large) the byte tokens "<0x00>"…"<0xFF>", and the rest
// "<placeholder_N>". llama.cpp loads and runs such a model from token ids;
// its text is meaningless.
func PlaceholderVocab(vocabSize, bos, eos, pad int) *Vocab {
	v := &Vocab{Model: "llama", Pre: "default", BOS: bos, EOS: eos, PAD: pad, UNK: -1, Placeholder: true,
		Tokens: make([]string, vocabSize), Types: make([]int32, vocabSize), Scores: make([]float32, vocabSize)}
	b := 0
	for id := range vocabSize {
		switch {
		case id == bos:
			v.Tokens[id], v.Types[id] = "<s>", tokenControl
		case id == eos:
			v.Tokens[id], v.Types[id] = "</s>", tokenControl
		case id == pad:
			v.Tokens[id], v.Types[id] = "<pad>", tokenControl
		case b < 256 && id >= 3:
			v.Tokens[id], v.Types[id] = fmt.Sprintf("<0x%02X>", b), tokenByte
			b++
		default:
			v.Tokens[id], v.Types[id] = fmt.Sprintf("<placeholder_%d>", id), tokenNormal
		}
	}
	return v
}

// metadata returns the tokenizer.* keys.
func (v *Vocab) metadata() []kv {
	m := []kv{
		{"tokenizer.ggml.model", v.Model},
		{"tokenizer.ggml.pre", v.Pre},
		{"tokenizer.ggml.tokens", v.Tokens},
		{"tokenizer.ggml.token_type", v.Types},
	}
	if v.Scores != nil {
		m = append(m, kv{"tokenizer.ggml.scores", v.Scores})
	}
	if v.Merges != nil {
		m = append(m, kv{"tokenizer.ggml.merges", v.Merges})
	}
	for _, id := range []struct {
		key string
		id  int
	}{{"tokenizer.ggml.bos_token_id", v.BOS}, {"tokenizer.ggml.eos_token_id", v.EOS},
		{"tokenizer.ggml.padding_token_id", v.PAD}, {"tokenizer.ggml.unknown_token_id", v.UNK}} {
		if id.id >= 0 {
			m = append(m, kv{id.key, uint32(id.id)})
		}
	}
	m = append(m, kv{"tokenizer.ggml.add_bos_token", v.AddBOS}, kv{"tokenizer.ggml.add_eos_token", false})
	if v.Model == "llama" {
		m = append(m, kv{"tokenizer.ggml.add_space_prefix", v.AddSpacePrefix})
	}
	if v.ChatTemplate != "" {
		m = append(m, kv{"tokenizer.chat_template", v.ChatTemplate})
	}
	return m
}
