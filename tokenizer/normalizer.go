package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites the text of one piece before pre-tokenization.
type normalizer interface {
	normalize(s string) string
}

type unicodeNorm struct{ form norm.Form }

func (n unicodeNorm) normalize(s string) string {
	if n.form.IsNormalString(s) {
		return s
	}
	return n.form.String(s)
}

type lowercaseNorm struct{}

func (lowercaseNorm) normalize(s string) string { return strings.ToLower(s) }

type prependNorm struct{ prefix string }

func (p prependNorm) normalize(s string) string {
	if s == "" {
		return s
	}
	return p.prefix + s
}

type replaceNorm struct{ pat pattern }

func (r replaceNorm) normalize(s string) string { return r.pat.replaceAll(s) }

type stripNorm struct{ left, right bool }

func (n stripNorm) normalize(s string) string {
	if n.left {
		s = strings.TrimLeftFunc(s, isWhiteSpace)
	}
	if n.right {
		s = strings.TrimRightFunc(s, isWhiteSpace)
	}
	return s
}

type sequenceNorm []normalizer

func (q sequenceNorm) normalize(s string) string {
	for _, n := range q {
		s = n.normalize(s)
	}
	return s
}

// pattern is the {"String": ...} or {"Regex": ...} of Replace and Split.
type pattern struct {
	literal string
	re      *regexp2.Regexp // nil for a literal
	content string          // replacement, for Replace
}

type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func parsePattern(raw json.RawMessage, where string) (pattern, error) {
	var pj patternJSON
	if err := json.Unmarshal(raw, &pj); err != nil {
		return pattern{}, fmt.Errorf("%s: pattern: %w", where, err)
	}
	switch {
	case pj.String != nil:
		if *pj.String == "" {
			return pattern{}, fmt.Errorf("%s: empty String pattern", where)
		}
		return pattern{literal: *pj.String}, nil
	case pj.Regex != nil:
		re, err := compileRegex(*pj.Regex)
		if err != nil {
			return pattern{}, fmt.Errorf("%s: regex %q: %w", where, *pj.Regex, err)
		}
		return pattern{literal: *pj.Regex, re: re}, nil
	}
	return pattern{}, fmt.Errorf("%s: pattern needs String or Regex", where)
}

// compileRegex compiles an Oniguruma-style pattern from tokenizer.json with
// regexp2, which (unlike regexp) has the lookahead the models' patterns use.
func compileRegex(expr string) (*regexp2.Regexp, error) {
	return regexp2.Compile(expr, regexp2.None)
}

// findAll returns the byte spans of all non-overlapping matches in s.
func (p pattern) findAll(s string, dst [][2]int) [][2]int {
	if p.re == nil {
		for i := 0; i <= len(s)-len(p.literal); {
			j := strings.Index(s[i:], p.literal)
			if j < 0 {
				break
			}
			dst = append(dst, [2]int{i + j, i + j + len(p.literal)})
			i += j + len(p.literal)
		}
		return dst
	}
	return regexFindAll(p.re, s, dst)
}

// regexFindAll runs a regexp2 pattern over s and converts its rune offsets
// to byte offsets.
func regexFindAll(re *regexp2.Regexp, s string, dst [][2]int) [][2]int {
	runes := []rune(s)
	m, err := re.FindRunesMatch(runes)
	// Map rune index -> byte offset incrementally (matches come in order).
	ri, bi := 0, 0
	advance := func(to int) int {
		for ri < to {
			bi += runeLen(runes[ri])
			ri++
		}
		return bi
	}
	for err == nil && m != nil {
		start := advance(m.Index)
		end := advance(m.Index + m.Length)
		dst = append(dst, [2]int{start, end})
		m, err = re.FindNextMatch(m)
	}
	return dst
}

func runeLen(r rune) int {
	switch {
	case r < 0x80:
		return 1
	case r < 0x800:
		return 2
	case r < 0x10000:
		return 3
	default:
		return 4
	}
}

func (p pattern) replaceAll(s string) string {
	if p.re == nil {
		return strings.ReplaceAll(s, p.literal, p.content)
	}
	spans := p.findAll(s, nil)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp[0]])
		b.WriteString(p.content)
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

type normalizerJSON struct {
	Type        string            `json:"type"`
	Normalizers []json.RawMessage `json:"normalizers"`
	Pattern     json.RawMessage   `json:"pattern"`
	Content     string            `json:"content"`
	Prepend     string            `json:"prepend"`
	Left        bool              `json:"left"`
	Right       bool              `json:"right"`
}

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var nj normalizerJSON
	if err := json.Unmarshal(raw, &nj); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch nj.Type {
	case "NFC":
		return unicodeNorm{norm.NFC}, nil
	case "NFD":
		return unicodeNorm{norm.NFD}, nil
	case "NFKC":
		return unicodeNorm{norm.NFKC}, nil
	case "NFKD":
		return unicodeNorm{norm.NFKD}, nil
	case "Lowercase":
		return lowercaseNorm{}, nil
	case "Prepend":
		return prependNorm{nj.Prepend}, nil
	case "Strip":
		return stripNorm{nj.Left, nj.Right}, nil
	case "Replace":
		p, err := parsePattern(nj.Pattern, "normalizer Replace")
		if err != nil {
			return nil, err
		}
		p.content = nj.Content
		return replaceNorm{p}, nil
	case "Sequence":
		var seq sequenceNorm
		for i, r := range nj.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, fmt.Errorf("normalizer Sequence[%d]: %w", i, err)
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		return seq, nil
	case "":
		return nil, fmt.Errorf("normalizer: missing type")
	}
	return nil, fmt.Errorf("normalizer: %w %q", ErrUnsupported, nj.Type)
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}
