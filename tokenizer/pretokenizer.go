package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// preTokenizer splits a normalized piece into words. first reports that
// words[0] starts at offset 0 of the original input (Metaspace's
// prepend_scheme "first" needs it).
type preTokenizer interface {
	preTokenize(words []string, first bool) []string
}

// splitBehavior is Rust's SplitDelimiterBehavior.
type splitBehavior int

const (
	behRemoved splitBehavior = iota
	behIsolated
	behMergedWithPrevious
	behMergedWithNext
	behContiguous
)

func parseBehavior(s string) (splitBehavior, error) {
	switch strings.ToLower(s) {
	case "removed":
		return behRemoved, nil
	case "isolated":
		return behIsolated, nil
	case "merged_with_previous", "mergedwithprevious":
		return behMergedWithPrevious, nil
	case "merged_with_next", "mergedwithnext":
		return behMergedWithNext, nil
	case "contiguous":
		return behContiguous, nil
	}
	return 0, fmt.Errorf("unknown split behavior %q", s)
}

type span struct {
	start, end int
	match      bool
}

// splitSpans cuts s at the given match spans the way Rust's
// NormalizedString::split does, appending the non-empty pieces to dst.
func splitSpans(s string, matches [][2]int, beh splitBehavior, invert bool, dst []string) []string {
	if len(matches) == 0 && !invert {
		if s != "" {
			dst = append(dst, s)
		}
		return dst
	}
	// Cover the whole string with (span, isMatch).
	var all []span
	prev := 0
	for _, m := range matches {
		if m[0] == m[1] {
			continue
		}
		if prev != m[0] {
			all = append(all, span{prev, m[0], false})
		}
		all = append(all, span{m[0], m[1], true})
		prev = m[1]
	}
	if prev != len(s) {
		all = append(all, span{prev, len(s), false})
	}
	if invert {
		for i := range all {
			all[i].match = !all[i].match
		}
	}
	var out []span
	switch beh {
	case behIsolated:
		out = all
	case behRemoved:
		for _, sp := range all {
			if !sp.match {
				out = append(out, sp)
			}
		}
	case behContiguous:
		prevMatch := false
		for i, sp := range all {
			if i > 0 && sp.match == prevMatch {
				out[len(out)-1].end = sp.end
			} else {
				out = append(out, sp)
			}
			prevMatch = sp.match
		}
	case behMergedWithPrevious:
		prevMatch := false
		for _, sp := range all {
			if sp.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].end = sp.end
			} else {
				out = append(out, sp)
			}
			prevMatch = sp.match
		}
	case behMergedWithNext:
		prevMatch := false
		for i := len(all) - 1; i >= 0; i-- {
			sp := all[i]
			if sp.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].start = sp.start
			} else {
				out = append(out, sp)
			}
			prevMatch = sp.match
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	for _, sp := range out {
		if sp.end > sp.start {
			dst = append(dst, s[sp.start:sp.end])
		}
	}
	return dst
}

// splitPre is the Split pre-tokenizer.
type splitPre struct {
	pat    pattern
	fast   func(s string, dst [][2]int) [][2]int // hand-written matcher for known regexes
	beh    splitBehavior
	invert bool
}

func (p *splitPre) preTokenize(words []string, _ bool) []string {
	out := make([]string, 0, len(words)*2)
	var spans [][2]int
	for _, w := range words {
		spans = spans[:0]
		if p.fast != nil {
			spans = p.fast(w, spans)
		} else {
			spans = p.pat.findAll(w, spans)
		}
		if p.beh == behIsolated && !p.invert {
			// Fast path: matches and gaps each become a word.
			prev := 0
			for _, m := range spans {
				if m[0] > prev {
					out = append(out, w[prev:m[0]])
				}
				if m[1] > m[0] {
					out = append(out, w[m[0]:m[1]])
				}
				prev = m[1]
			}
			if prev < len(w) {
				out = append(out, w[prev:])
			}
			continue
		}
		out = splitSpans(w, spans, p.beh, p.invert, out)
	}
	return out
}

// byteLevelPre maps every byte to GPT-2's printable alphabet, optionally
// adding a prefix space and splitting with the GPT-2 regex first.
type byteLevelPre struct {
	addPrefixSpace bool
	regex          *splitPre // nil unless use_regex
}

func (p *byteLevelPre) preTokenize(words []string, _ bool) []string {
	if p.addPrefixSpace {
		for i, w := range words {
			if !strings.HasPrefix(w, " ") {
				words[i] = " " + w
			}
		}
	}
	if p.regex != nil {
		words = p.regex.preTokenize(words, false)
	}
	for i, w := range words {
		words[i] = byteLevelEncode(w)
	}
	return words
}

// digitsPre splits digits off (individually or as runs).
type digitsPre struct{ individual bool }

func (p digitsPre) preTokenize(words []string, _ bool) []string {
	var out []string
	for _, w := range words {
		var spans [][2]int
		for i, r := range w {
			if unicode.IsNumber(r) {
				spans = append(spans, [2]int{i, i + utf8.RuneLen(r)})
			}
		}
		beh := behContiguous
		if p.individual {
			beh = behIsolated
		}
		out = splitSpans(w, spans, beh, false, out)
	}
	return out
}

// metaspacePre replaces spaces with ▁ and splits before each ▁.
type metaspacePre struct {
	repl    string
	prepend string // "always", "first" or "never"
	split   bool
}

func (p *metaspacePre) preTokenize(words []string, first bool) []string {
	var out []string
	for i, w := range words {
		w = strings.ReplaceAll(w, " ", p.repl)
		if !strings.HasPrefix(w, p.repl) && (p.prepend == "always" || p.prepend == "first" && first && i == 0) {
			w = p.repl + w
		}
		if !p.split {
			out = append(out, w)
			continue
		}
		var spans [][2]int
		for j := 0; ; {
			k := strings.Index(w[j:], p.repl)
			if k < 0 {
				break
			}
			spans = append(spans, [2]int{j + k, j + k + len(p.repl)})
			j += k + len(p.repl)
		}
		out = splitSpans(w, spans, behMergedWithNext, false, out)
	}
	return out
}

// whitespacePre is HF's Whitespace (\w+|[^\w\s]+) or WhitespaceSplit.
type whitespacePre struct{ splitOnly bool }

func (p whitespacePre) preTokenize(words []string, _ bool) []string {
	var out []string
	for _, w := range words {
		if p.splitOnly {
			out = append(out, strings.FieldsFunc(w, isWhiteSpace)...)
			continue
		}
		start, class := -1, 0 // class 1: word chars, 2: other non-space
		for i, r := range w {
			c := 2
			switch {
			case isWhiteSpace(r):
				c = 0
			case unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_' || unicode.Is(unicode.Mn, r):
				c = 1
			}
			if c != class {
				if class != 0 && start >= 0 {
					out = append(out, w[start:i])
				}
				start, class = i, c
			}
		}
		if class != 0 && start >= 0 {
			out = append(out, w[start:])
		}
	}
	return out
}

type sequencePre []preTokenizer

func (q sequencePre) preTokenize(words []string, first bool) []string {
	for _, p := range q {
		words = p.preTokenize(words, first)
	}
	return words
}

func isWhiteSpace(r rune) bool { return unicode.IsSpace(r) }

type preTokenizerJSON struct {
	Type           string            `json:"type"`
	Pretokenizers  []json.RawMessage `json:"pretokenizers"`
	Pattern        json.RawMessage   `json:"pattern"`
	Behavior       string            `json:"behavior"`
	Invert         bool              `json:"invert"`
	AddPrefixSpace *bool             `json:"add_prefix_space"`
	UseRegex       *bool             `json:"use_regex"`
	Individual     bool              `json:"individual_digits"`
	Replacement    string            `json:"replacement"`
	PrependScheme  string            `json:"prepend_scheme"`
	Split          *bool             `json:"split"`
}

// gpt2Pattern is the regex ByteLevel uses when use_regex is true.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func parsePreTokenizer(raw json.RawMessage) (preTokenizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var pj preTokenizerJSON
	if err := json.Unmarshal(raw, &pj); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch pj.Type {
	case "Sequence":
		var seq sequencePre
		for i, r := range pj.Pretokenizers {
			p, err := parsePreTokenizer(r)
			if err != nil {
				return nil, fmt.Errorf("pre_tokenizer Sequence[%d]: %w", i, err)
			}
			if p != nil {
				seq = append(seq, p)
			}
		}
		return seq, nil
	case "Split":
		pat, err := parsePattern(pj.Pattern, "pre_tokenizer Split")
		if err != nil {
			return nil, err
		}
		beh, err := parseBehavior(pj.Behavior)
		if err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		sp := &splitPre{pat: pat, beh: beh, invert: pj.Invert}
		if pat.re != nil {
			sp.fast = fastMatcher(pat.literal)
		}
		return sp, nil
	case "ByteLevel":
		p := &byteLevelPre{addPrefixSpace: pj.AddPrefixSpace != nil && *pj.AddPrefixSpace}
		if pj.UseRegex == nil || *pj.UseRegex {
			re, err := compileRegex(gpt2Pattern)
			if err != nil {
				return nil, fmt.Errorf("pre_tokenizer ByteLevel: %w", err)
			}
			p.regex = &splitPre{pat: pattern{literal: gpt2Pattern, re: re}, beh: behIsolated, fast: fastMatcher(gpt2Pattern)}
		}
		return p, nil
	case "Digits":
		return digitsPre{pj.Individual}, nil
	case "Metaspace":
		p := &metaspacePre{repl: pj.Replacement, prepend: pj.PrependScheme, split: pj.Split == nil || *pj.Split}
		if p.repl == "" {
			p.repl = "▁"
		}
		if p.prepend == "" {
			p.prepend = "always"
			if pj.AddPrefixSpace != nil && !*pj.AddPrefixSpace {
				p.prepend = "never"
			}
		}
		return p, nil
	case "Whitespace":
		return whitespacePre{}, nil
	case "WhitespaceSplit":
		return whitespacePre{splitOnly: true}, nil
	case "":
		return nil, fmt.Errorf("pre_tokenizer: missing type")
	}
	return nil, fmt.Errorf("pre_tokenizer: %w %q", ErrUnsupported, pj.Type)
}
