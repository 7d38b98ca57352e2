package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
)

// ChatMLTemplate is a minimal ChatML chat template (the format of Qwen and
// SmolLM2), used by WriteTinyDir.
const ChatMLTemplate = `{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

// ChatMLSpecials returns the special tokens WriteTinyDir adds: end of text
// (also the pad token), start and end of a turn (end of turn is EOS).
func ChatMLSpecials() []string {
	return []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}
}

// NewByteBPE builds the tokenizer.json of a tiny byte-level BPE: the 256
// byte symbols, merges that make each of words (and " "+word) a single
// token, and specials as special added tokens. Any text round-trips
// exactly. Words that overlap (one inside another) may still take two
// tokens. Token ids: bytes 0-255, then merge results, then specials.
func NewByteBPE(words, specials []string) ([]byte, error) {
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[byteToStr[b]] = b
	}
	var merges [][2]string
	// All " word" chains rank before the plain ones so that the merges
	// starting at the space win; longer words first limit overlaps.
	var variants []string
	for _, prefix := range []string{" ", ""} {
		for _, w := range sortedByLen(words) {
			if w == "" {
				return nil, errors.New("tokenizer: NewByteBPE: empty word")
			}
			variants = append(variants, prefix+w)
		}
	}
	for _, v := range variants {
		{
			enc := []rune(byteLevelEncode(v))
			cur := string(enc[0])
			for _, r := range enc[1:] {
				next := cur + string(r)
				if _, ok := vocab[next]; !ok {
					vocab[next] = len(vocab)
					merges = append(merges, [2]string{cur, string(r)})
				}
				cur = next
			}
		}
	}
	added := make([]AddedToken, len(specials))
	for i, s := range specials {
		if s == "" {
			return nil, errors.New("tokenizer: NewByteBPE: empty special token")
		}
		added[i] = AddedToken{ID: len(vocab) + i, Content: s, Special: true}
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
	doc := map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": added,
		"normalizer":   nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]string{"Regex": qwen2Pattern}, "behavior": "Isolated", "invert": false},
			byteLevel,
		}},
		"post_processor": byteLevel,
		"decoder":        byteLevel,
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": merges,
		},
	}
	return marshalNoEscape(doc)
}

// marshalNoEscape is json.MarshalIndent without \u003c for '<' (HF files
// keep "<|im_end|>" readable).
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func sortedByLen(words []string) []string {
	out := append([]string(nil), words...)
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// WriteTinyDir writes tokenizer.json (NewByteBPE with ChatMLSpecials) and a
// tokenizer_config.json with ChatMLTemplate, eos_token <|im_end|> and
// pad_token <|endoftext|> to dir, creating it. LoadDir reads it back.
func WriteTinyDir(dir string, words []string) error {
	tj, err := NewByteBPE(words, ChatMLSpecials())
	if err != nil {
		return err
	}
	cfg, err := marshalNoEscape(map[string]any{
		"bos_token":        nil,
		"eos_token":        "<|im_end|>",
		"pad_token":        "<|endoftext|>",
		"chat_template":    ChatMLTemplate,
		"model_max_length": 4096,
		"tokenizer_class":  "PreTrainedTokenizerFast",
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tokenizer: %w", err)
	}
	for name, data := range map[string][]byte{"tokenizer.json": tj, "tokenizer_config.json": cfg} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("tokenizer: %w", err)
		}
	}
	return nil
}

// FrequentWords returns the n words that pattern matches most often across
// texts, most frequent first (ties alphabetical): the vocabulary of a tiny
// tokenizer for WriteTinyDir.
func FrequentWords(texts []string, pattern *regexp.Regexp, n int) []string {
	counts := map[string]int{}
	for _, text := range texts {
		for _, w := range pattern.FindAllString(text, -1) {
			counts[w]++
		}
	}
	words := make([]string, 0, len(counts))
	for w := range counts {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		if counts[words[i]] != counts[words[j]] {
			return counts[words[i]] > counts[words[j]]
		}
		return words[i] < words[j]
	})
	return words[:min(n, len(words))]
}
