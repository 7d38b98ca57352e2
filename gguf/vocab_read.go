package gguf

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The reverse of NewVocab: a GGUF file's tokenizer (File.Vocab) and the
// Hugging Face tokenizer files that tokenize as llama.cpp does with it
// (Vocab.HFFiles). What llama.cpp does is its src/llama-vocab.cpp: the
// defaults of llama_vocab::impl::load and the pre-tokenizer regular
// expressions of llm_tokenizer_bpe.

// preSpec is what llama.cpp makes of a tokenizer.ggml.pre name for a "gpt2"
// (byte-level BPE) vocabulary.
type preSpec struct {
	// regexes split the text one after the other, each match and each
	// stretch between matches becoming a piece (llama.cpp's
	// unicode_regex_split; a Split pre-tokenizer with behavior Isolated).
	// They are written as the tokenizer.json files of the models have them
	// (Oniguruma syntax), not in llama.cpp's ECMAScript rewrites.
	regexes []string
	// ignoreMerges: a piece that is a token is taken whole (llama3 and kin).
	ignoreMerges bool
	// addBOS is llama.cpp's add_bos default, used when the file has no
	// tokenizer.ggml.add_bos_token.
	addBOS bool
	// cleanSpaces is llama.cpp's clean_spaces (transformers'
	// clean_up_tokenization_spaces) when decoding.
	cleanSpaces bool
}

// Regular expressions of llama.cpp's pre-tokenizers.
const (
	reGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	reLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reQwen35 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reGPT4o  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reTekken = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	reSeed   = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+`
	reDigit  = `\p{N}`
)

// preSpecs maps the tokenizer.ggml.pre names llama.cpp knows to what it
// does with them, for the pre-tokenizers this package reproduces: those of
// the model families grpokit trains (Llama 3 "llama-bpe", Qwen 2/2.5/3
// "qwen2", SmolLM "smollm") and the other names llama.cpp gives the same
// or similarly simple expressions.
var preSpecs = func() map[string]preSpec {
	m := map[string]preSpec{}
	add := func(s preSpec, names ...string) {
		for _, n := range names {
			m[n] = s
		}
	}
	add(preSpec{regexes: []string{`[\p{P}\$\+<=>\^~\|]+`, reGPT2, `\p{N}+`, `[0-9][0-9][0-9]`}, cleanSpaces: true}, "default")
	add(preSpec{regexes: []string{reLlama3}, ignoreMerges: true, addBOS: true, cleanSpaces: true},
		"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano")
	add(preSpec{regexes: []string{reLlama3}, cleanSpaces: true}, "dbrx", "smaug-bpe")
	add(preSpec{regexes: []string{reGPT2}, cleanSpaces: true},
		"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "mpt", "olmo", "jais", "exaone4")
	add(preSpec{regexes: []string{reGPT2}}, "trillion", "granite-docling")
	add(preSpec{regexes: []string{reDigit, reGPT2}, cleanSpaces: true}, "starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2")
	add(preSpec{regexes: []string{reDigit, reGPT2}}, "smollm", "command-r")
	add(preSpec{regexes: []string{reQwen2}}, "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open")
	add(preSpec{regexes: []string{reQwen2}, cleanSpaces: true}, "stablelm2", "megrez")
	add(preSpec{regexes: []string{reQwen35}}, "qwen35")
	add(preSpec{regexes: []string{`[\p{P}\$\+<=>\^~\|` + "`" + `]+`, reGPT2, `[0-9][0-9][0-9]`}, cleanSpaces: true}, "falcon")
	add(preSpec{regexes: []string{`[\r\n]`, `\s?\p{L}+`, `\s?\p{P}+`, `[一-龥ࠀ-一가-퟿]+`, reDigit}}, "deepseek-coder")
	add(preSpec{regexes: []string{` ?[^(\s|.,!?…。，、।۔،)]+`}}, "poro-chat")
	add(preSpec{regexes: []string{` ?[^(\s|.,!?…。，、।۔،)]+`}, cleanSpaces: true}, "bloom", "gpt3-finnish")
	add(preSpec{regexes: []string{reGPT4o}}, "gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2")
	add(preSpec{regexes: []string{reTekken}, ignoreMerges: true, addBOS: true}, "tekken")
	add(preSpec{regexes: []string{reSeed}}, "seed-coder")
	return m
}()

// Token types llama.cpp splits out of the text before tokenizing it (its
// cache_special_tokens): they become tokenizer.json's added tokens.
func isAddedType(t int32) bool {
	return t == tokenControl || t == tokenUserDefined || t == tokenUnknown
}

// Vocab reads the tokenizer of the file: the tokenizer.ggml.* keys and
// tokenizer.chat_template. Where a key is absent it takes llama.cpp's
// default: token types all normal, no merges for "llama"; add_bos_token
// true for "llama" and for the Llama 3 family of pre-tokenizers, else
// false; add_space_prefix true for "llama"; a missing tokenizer.ggml.pre is
// "default"; a "llama" vocabulary without bos/eos/unknown ids has
// SentencePiece's 1, 2 and 0 (where the vocabulary has them). A "gpt2"
// vocabulary without them has none (-1), where llama.cpp would take id 11.
//
// It is an error (a *FormatError naming the file and key) for a key that
// is missing where llama.cpp requires it (tokens; merges for "gpt2") or
// holds the wrong type; for token_type or scores whose length is not the
// number of tokens; for a duplicate token or a merge without a space; for a
// special token id outside the vocabulary; for a tokenizer.ggml.model other
// than "gpt2" and "llama" and a "gpt2" pre-tokenizer this package does not
// reproduce (both wrap ErrUnsupported); and for add_eos_token true, which a
// Vocab cannot hold. An empty token is renamed "[EMPTY_id]", as llama.cpp
// does.
func (g *File) Vocab() (*Vocab, error) {
	const (
		kModel    = "tokenizer.ggml.model"
		kPre      = "tokenizer.ggml.pre"
		kTokens   = "tokenizer.ggml.tokens"
		kTypes    = "tokenizer.ggml.token_type"
		kScores   = "tokenizer.ggml.scores"
		kMerges   = "tokenizer.ggml.merges"
		kAddBOS   = "tokenizer.ggml.add_bos_token"
		kAddEOS   = "tokenizer.ggml.add_eos_token"
		kPrefix   = "tokenizer.ggml.add_space_prefix"
		kTemplate = "tokenizer.chat_template"
	)
	unsupported := func(key, format string, args ...any) error {
		return &FormatError{Path: g.Path, Field: "metadata key " + key, Err: fmt.Errorf("%w: "+format, append([]any{ErrUnsupported}, args...)...)}
	}
	v := &Vocab{BOS: -1, EOS: -1, PAD: -1, UNK: -1}
	model, ok, err := g.String(kModel)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, g.keyError(kModel, "missing: the file has no tokenizer")
	case model != "gpt2" && model != "llama":
		return nil, unsupported(kModel, "tokenizer %q: only \"gpt2\" (byte-level BPE) and \"llama\" (SentencePiece BPE) tokenizers are read here", model)
	}
	v.Model = model
	pre, ok, err := g.String(kPre)
	if err != nil {
		return nil, err
	}
	if !ok || pre == "" {
		pre = "default"
	}
	v.Pre = pre
	var spec preSpec
	if model == "gpt2" {
		if spec, ok = preSpecs[pre]; !ok {
			return nil, unsupported(kPre, "pre-tokenizer %q: not one this package reproduces (%s)", pre, strings.Join(knownPres(), ", "))
		}
	}

	raw, ok := g.Lookup(kTokens)
	if !ok {
		return nil, g.keyError(kTokens, "missing: the file has no tokenizer vocabulary")
	}
	tokens, isStrs := raw.([]string)
	if !isStrs {
		return nil, g.keyError(kTokens, "a %T, want an array of strings", raw)
	}
	n := len(tokens)
	if n == 0 {
		return nil, g.keyError(kTokens, "empty")
	}
	v.Tokens = slices.Clone(tokens)
	seen := make(map[string]int, n)
	for i, s := range v.Tokens {
		if s == "" {
			s = "[EMPTY_" + strconv.Itoa(i) + "]"
			v.Tokens[i] = s
		}
		if j, dup := seen[s]; dup {
			return nil, g.keyError(kTokens, "token %q is both id %d and id %d", s, j, i)
		}
		seen[s] = i
	}

	v.Types = make([]int32, n)
	if raw, ok := g.Lookup(kTypes); ok {
		types, isInts := raw.([]int32)
		switch {
		case !isInts:
			return nil, g.keyError(kTypes, "a %T, want an array of int32", raw)
		case len(types) != n:
			return nil, g.keyError(kTypes, "%d token types for %d tokens", len(types), n)
		}
		copy(v.Types, types)
	} else {
		for i := range v.Types {
			v.Types[i] = tokenNormal
		}
	}
	if raw, ok := g.Lookup(kScores); ok {
		switch s := raw.(type) {
		case []float32:
			v.Scores = slices.Clone(s)
		case []int32: // llama.cpp accepts integer scores too
			v.Scores = make([]float32, len(s))
			for i, x := range s {
				v.Scores[i] = float32(x)
			}
		default:
			return nil, g.keyError(kScores, "a %T, want an array of float32", raw)
		}
		if len(v.Scores) != n {
			return nil, g.keyError(kScores, "%d scores for %d tokens", len(v.Scores), n)
		}
	}
	if raw, ok := g.Lookup(kMerges); ok {
		merges, isStrs := raw.([]string)
		if !isStrs {
			return nil, g.keyError(kMerges, "a %T, want an array of strings", raw)
		}
		for i, m := range merges {
			if len(m) < 3 || strings.IndexByte(m[1:], ' ') < 0 {
				return nil, g.keyError(kMerges, "merge %d (%q) is not \"left right\"", i, m)
			}
		}
		v.Merges = slices.Clone(merges)
	} else if model == "gpt2" {
		return nil, g.keyError(kMerges, "missing: a \"gpt2\" tokenizer needs its merges")
	}

	if model == "llama" {
		v.BOS, v.EOS, v.UNK = 1, 2, 0
		for _, id := range []*int{&v.BOS, &v.EOS, &v.UNK} {
			if *id >= n {
				*id = -1
			}
		}
	}
	for _, id := range []struct {
		key string
		dst *int
	}{{"tokenizer.ggml.bos_token_id", &v.BOS}, {"tokenizer.ggml.eos_token_id", &v.EOS},
		{"tokenizer.ggml.unknown_token_id", &v.UNK}, {"tokenizer.ggml.padding_token_id", &v.PAD}} {
		x, ok, err := g.Int(id.key)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			continue
		case x < 0 || x >= int64(n):
			return nil, g.keyError(id.key, "token id %d outside the vocabulary of %d tokens", x, n)
		}
		*id.dst = int(x)
	}

	v.AddBOS = model == "llama" || spec.addBOS
	if b, ok, err := g.Bool(kAddBOS); err != nil {
		return nil, err
	} else if ok {
		v.AddBOS = b
	}
	if v.AddBOS && v.BOS < 0 {
		return nil, g.keyError(kAddBOS, "true, but the file has no tokenizer.ggml.bos_token_id")
	}
	if b, _, err := g.Bool(kAddEOS); err != nil {
		return nil, err
	} else if b {
		return nil, unsupported(kAddEOS, "true (an EOS after every encoded text) is not supported")
	}
	v.AddSpacePrefix = model == "llama"
	if b, ok, err := g.Bool(kPrefix); err != nil {
		return nil, err
	} else if ok {
		v.AddSpacePrefix = b
	}
	if s, _, err := g.String(kTemplate); err != nil {
		return nil, err
	} else {
		v.ChatTemplate = s
	}
	v.Placeholder = isPlaceholder(v)
	return v, nil
}

// knownPres lists the pre-tokenizer names of preSpecs, sorted.
func knownPres() []string {
	names := make([]string, 0, len(preSpecs))
	for n := range preSpecs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// isPlaceholder reports whether v is a vocabulary PlaceholderVocab made:
// "<placeholder_N>" tokens besides the special and byte ones.
func isPlaceholder(v *Vocab) bool {
	if v.Model != "llama" {
		return false
	}
	found := false
	for i, s := range v.Tokens {
		if v.Types[i] == tokenNormal {
			if !strings.HasPrefix(s, "<placeholder_") {
				return false
			}
			found = true
		}
	}
	return found
}

// HFOptions are what a Hugging Face tokenizer_config.json holds that a
// Vocab does not.
type HFOptions struct {
	// ModelMaxLength is the model's context length (the file's
	// {arch}.context_length); 0 leaves model_max_length out.
	ModelMaxLength int
}

// HFFiles returns a Hugging Face tokenizer.json and tokenizer_config.json
// that tokenize as llama.cpp tokenizes with v (special tokens parsed), for
// package tokenizer and for transformers alike:
//
//   - "gpt2": byte-level BPE with v's merges and the pre-tokenizer
//     llama.cpp uses for v.Pre (a Split by each of its regular expressions,
//     then ByteLevel), ignore_merges where llama.cpp ignores them.
//   - "llama": BPE with byte fallback over "▁"-escaped text (SentencePiece
//     style), a "▁" prepended to the text and after each special token when
//     AddSpacePrefix is set; the merges are every split of a token into two
//     tokens, ranked by the token's score (highest first), which makes BPE
//     merge in the order llama.cpp's SentencePiece tokenizer does (as
//     transformers' GGUF converter does too).
//
// Control, user-defined and unknown tokens are added tokens (all but
// user-defined ones special), matched in the raw text as llama.cpp does.
// BOS is put first by the post-processor when AddBOS is set. The config
// names BOS, EOS, PAD and UNK, carries the chat template, add_bos_token and
// clean_up_tokenization_spaces (llama.cpp's clean_spaces).
//
// Known differences from llama.cpp, all rare: among equal scores
// llama.cpp's SentencePiece merges the leftmost pair where BPE takes the
// lower rank; llama.cpp matches special tokens longest first over the
// whole text where the Hugging Face tokenizers take the leftmost; llama.cpp
// makes a few tokens it knows by their text ("<|im_end|>", "<|eot_id|>",
// FIM tokens, ...) control tokens where the file types them normal, which
// stay normal here. The Rust tokenizers library (transformers, not package
// tokenizer) case-folds "(?i:'s)" of the Llama 3 and Qwen expressions to
// match "'ſ" (U+017F) too, which llama.cpp's rewrite "'[sS]" does not.
func (v *Vocab) HFFiles(opts HFOptions) (tokenizerJSON, tokenizerConfig []byte, err error) {
	n := len(v.Tokens)
	if n == 0 {
		return nil, nil, fmt.Errorf("gguf: HFFiles: an empty vocabulary")
	}
	if len(v.Types) != n || (v.Scores != nil && len(v.Scores) != n) {
		return nil, nil, fmt.Errorf("gguf: HFFiles: %d tokens, %d types and %d scores", n, len(v.Types), len(v.Scores))
	}
	for _, id := range []struct {
		name string
		id   int
	}{{"BOS", v.BOS}, {"EOS", v.EOS}, {"PAD", v.PAD}, {"UNK", v.UNK}} {
		if id.id < -1 || id.id >= n {
			return nil, nil, fmt.Errorf("gguf: HFFiles: %s id %d outside the vocabulary of %d tokens", id.name, id.id, n)
		}
	}
	if v.AddBOS && v.BOS < 0 {
		return nil, nil, fmt.Errorf("gguf: HFFiles: AddBOS without a BOS token")
	}
	ids := make(map[string]int, n)
	for i, s := range v.Tokens {
		if s == "" {
			return nil, nil, fmt.Errorf("gguf: HFFiles: token %d is empty", i)
		}
		if j, dup := ids[s]; dup {
			return nil, nil, fmt.Errorf("gguf: HFFiles: token %q is both id %d and id %d", s, j, i)
		}
		ids[s] = i
	}

	var added []jsonObj
	for i, s := range v.Tokens {
		if isAddedType(v.Types[i]) {
			added = append(added, jsonObj{{"id", i}, {"content", s}, {"single_word", false}, {"lstrip", false},
				{"rstrip", false}, {"normalized", false}, {"special", v.Types[i] != tokenUserDefined}})
		}
	}
	tokenOrNull := func(id int) any {
		if id < 0 {
			return nil
		}
		return v.Tokens[id]
	}
	var post any
	if v.AddBOS {
		bos := v.Tokens[v.BOS]
		special := func(typeID int) jsonObj {
			return jsonObj{{"SpecialToken", jsonObj{{"id", bos}, {"type_id", typeID}}}}
		}
		seq := func(id string, typeID int) jsonObj {
			return jsonObj{{"Sequence", jsonObj{{"id", id}, {"type_id", typeID}}}}
		}
		post = jsonObj{{"type", "TemplateProcessing"},
			{"single", []jsonObj{special(0), seq("A", 0)}},
			{"pair", []jsonObj{special(0), seq("A", 0), special(1), seq("B", 1)}},
			{"special_tokens", jsonObj{{bos, jsonObj{{"id", bos}, {"ids", []int{v.BOS}}, {"tokens", []string{bos}}}}}}}
	}

	var normalizer, preTok, decoder any
	var merges mergeList
	var cleanSpaces, ignoreMerges, byteFallback bool
	var unk any
	switch v.Model {
	case "gpt2":
		spec, ok := preSpecs[v.Pre]
		if !ok {
			return nil, nil, fmt.Errorf("%w: tokenizer.ggml.pre %q: not a pre-tokenizer this package reproduces (%s)", ErrUnsupported, v.Pre, strings.Join(knownPres(), ", "))
		}
		cleanSpaces, ignoreMerges = spec.cleanSpaces, spec.ignoreMerges
		preTok = byteLevelPreTokenizer(spec.regexes)
		decoder = jsonObj{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}
		byteLevelPost := jsonObj{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}
		if post == nil {
			post = byteLevelPost
		} else {
			post = jsonObj{{"type", "Sequence"}, {"processors", []any{byteLevelPost, post}}}
		}
		merges = make(mergeList, len(v.Merges))
		for i, m := range v.Merges {
			// llama.cpp splits at the first space after the first byte.
			k := strings.IndexByte(m[min(1, len(m)):], ' ') + 1
			if k <= 0 {
				return nil, nil, fmt.Errorf("gguf: HFFiles: merge %d (%q) is not \"left right\"", i, m)
			}
			merges[i] = [2]string{m[:k], m[k+1:]}
		}
	case "llama":
		if v.Scores == nil {
			return nil, nil, fmt.Errorf("gguf: HFFiles: a \"llama\" vocabulary without scores")
		}
		byteFallback = true
		unk = tokenOrNull(v.UNK)
		replace := jsonObj{{"type", "Replace"}, {"pattern", jsonObj{{"String", " "}}}, {"content", "▁"}}
		normalizer = replace
		decoders := []any{
			jsonObj{{"type", "Replace"}, {"pattern", jsonObj{{"String", "▁"}}}, {"content", " "}},
			jsonObj{{"type", "ByteFallback"}},
			jsonObj{{"type", "Fuse"}},
		}
		if v.AddSpacePrefix {
			normalizer = jsonObj{{"type", "Sequence"}, {"normalizers", []any{jsonObj{{"type", "Prepend"}, {"prepend", "▁"}}, replace}}}
			decoders = append(decoders, jsonObj{{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}})
		}
		decoder = jsonObj{{"type", "Sequence"}, {"decoders", decoders}}
		merges = scoreMerges(v.Tokens, v.Scores, ids)
	default:
		return nil, nil, fmt.Errorf("%w: tokenizer model %q", ErrUnsupported, v.Model)
	}

	doc := jsonObj{
		{"version", "1.0"}, {"truncation", nil}, {"padding", nil},
		{"added_tokens", added},
		{"normalizer", normalizer},
		{"pre_tokenizer", preTok},
		{"post_processor", post},
		{"decoder", decoder},
		{"model", jsonObj{{"type", "BPE"}, {"dropout", nil}, {"unk_token", unk},
			{"continuing_subword_prefix", nil}, {"end_of_word_suffix", nil},
			{"fuse_unk", byteFallback}, {"byte_fallback", byteFallback}, {"ignore_merges", ignoreMerges},
			{"vocab", vocabObj(v.Tokens)}, {"merges", merges}}},
	}
	if tokenizerJSON, err = marshalJSON(doc); err != nil {
		return nil, nil, err
	}

	cfg := jsonObj{
		{"add_bos_token", v.AddBOS}, {"add_eos_token", false},
		{"bos_token", tokenOrNull(v.BOS)}, {"eos_token", tokenOrNull(v.EOS)},
		{"pad_token", tokenOrNull(v.PAD)}, {"unk_token", tokenOrNull(v.UNK)},
		{"clean_up_tokenization_spaces", cleanSpaces},
	}
	if v.ChatTemplate != "" {
		cfg = append(cfg, jsonKV{"chat_template", v.ChatTemplate})
	}
	if opts.ModelMaxLength > 0 {
		cfg = append(cfg, jsonKV{"model_max_length", opts.ModelMaxLength})
	}
	cfg = append(cfg, jsonKV{"tokenizer_class", "PreTrainedTokenizerFast"})
	if tokenizerConfig, err = marshalJSON(cfg); err != nil {
		return nil, nil, err
	}
	return tokenizerJSON, tokenizerConfig, nil
}

// byteLevelPreTokenizer is tokenizer.json's pre_tokenizer for llama.cpp's
// regular expressions, in the form Hugging Face's own files use where
// there is one (so that NewVocab names it again): ByteLevel with its
// regex for GPT-2's, Digits then ByteLevel for SmolLM's; otherwise a
// Split (Isolated) per expression, then ByteLevel without a regex.
func byteLevelPreTokenizer(regexes []string) any {
	byteLevel := func(useRegex bool) jsonObj {
		return jsonObj{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", useRegex}}
	}
	switch {
	case slices.Equal(regexes, []string{reGPT2}):
		return byteLevel(true)
	case slices.Equal(regexes, []string{reDigit, reGPT2}):
		return jsonObj{{"type", "Sequence"}, {"pretokenizers", []any{
			jsonObj{{"type", "Digits"}, {"individual_digits", true}}, byteLevel(true)}}}
	}
	steps := make([]any, 0, len(regexes)+1)
	for _, re := range regexes {
		steps = append(steps, jsonObj{{"type", "Split"}, {"pattern", jsonObj{{"Regex", re}}}, {"behavior", "Isolated"}, {"invert", false}})
	}
	return jsonObj{{"type", "Sequence"}, {"pretokenizers", append(steps, byteLevel(false))}}
}

// scoreMerges returns the BPE merges that reproduce SentencePiece's
// highest-score-first merging: every split of a token into two tokens,
// ranked by the token's score (highest first), then by id, then by the
// scores of the left and right parts (highest first), as transformers'
// GGUF converter ranks them.
func scoreMerges(tokens []string, scores []float32, ids map[string]int) mergeList {
	type merge struct {
		l, r   string
		id     int
		sl, sr float32
	}
	var all []merge
	for id, s := range tokens {
		for k := 1; k < len(s); k++ {
			if !utf8.RuneStart(s[k]) {
				continue
			}
			l, r := s[:k], s[k:]
			li, okL := ids[l]
			ri, okR := ids[r]
			if okL && okR {
				all = append(all, merge{l, r, id, scores[li], scores[ri]})
			}
		}
	}
	slices.SortFunc(all, func(a, b merge) int {
		if c := cmp.Compare(scores[b.id], scores[a.id]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.id, b.id); c != 0 {
			return c
		}
		if c := cmp.Compare(b.sl, a.sl); c != 0 {
			return c
		}
		return cmp.Compare(b.sr, a.sr)
	})
	out := make(mergeList, len(all))
	for i, m := range all {
		out[i] = [2]string{m.l, m.r}
	}
	return out
}

// jsonObj is a JSON object that keeps its keys in order.
type jsonObj []jsonKV

type jsonKV struct {
	K string
	V any
}

// MarshalJSON writes the object with its keys in order.
func (o jsonObj) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, kv := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, kv.K)
		b = append(b, ':')
		vb, err := marshalJSON(kv.V)
		if err != nil {
			return nil, err
		}
		b = append(b, vb...)
	}
	return append(b, '}'), nil
}

// vocabObj is tokenizer.json's vocab: token -> id, in id order.
type vocabObj []string

// MarshalJSON writes {"token": id, ...}.
func (v vocabObj) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 16*len(v))
	b = append(b, '{')
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(i), 10)
	}
	return append(b, '}'), nil
}

// mergeList is tokenizer.json's merges as [left, right] pairs.
type mergeList [][2]string

// MarshalJSON writes [["left", "right"], ...].
func (m mergeList) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 16*len(m)+2)
	b = append(b, '[')
	for i, p := range m {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendJSONString(b, p[0])
		b = append(b, ',')
		b = appendJSONString(b, p[1])
		b = append(b, ']')
	}
	return append(b, ']'), nil
}

// marshalJSON is json.Marshal without HTML escaping ("<|im_start|>" stays
// readable).
func marshalJSON(x any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes
// U+FFFD as encoding/json writes it.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
