package reward

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Regex returns a Func that scores 1 when the completion matches pattern
// (Go RE2 syntax, unanchored unless the pattern says ^ or $) and 0 otherwise.
// It returns an error for a pattern that does not compile.
func Regex(pattern string) (Func, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("reward: regex %q: %w", pattern, err)
	}
	return func(_, completion, _ string) float64 {
		if re.MatchString(completion) {
			return 1
		}
		return 0
	}, nil
}

// MustRegex is like Regex but panics on a bad pattern; use it for
// patterns fixed in the source.
func MustRegex(pattern string) Func {
	f, err := Regex(pattern)
	if err != nil {
		panic(err)
	}
	return f
}

// TagContent returns the text between the last <tag> and the first </tag>
// after it, trimmed of surrounding white space. ok is false when either tag
// is missing.
func TagContent(text, tag string) (content string, ok bool) {
	open, closing := "<"+tag+">", "</"+tag+">"
	i := strings.LastIndex(text, open)
	if i < 0 {
		return "", false
	}
	rest := text[i+len(open):]
	j := strings.Index(rest, closing)
	if j < 0 {
		return "", false
	}
	return strings.TrimSpace(rest[:j]), true
}

// TagStructure returns a Func that scores 1 when the completion is exactly
// the given tags in order, each opened and closed once, with only white
// space before, between and after them, e.g. TagStructure("think", "guess")
// accepts "<think>...</think>\n<guess>...</guess>". Otherwise it scores 0.
// Tag names must be plain words (letters, digits, '_' or '-').
func TagStructure(tags ...string) Func {
	var b strings.Builder
	b.WriteString(`(?s)^\s*`)
	for i, t := range tags {
		if i > 0 {
			b.WriteString(`\s*`)
		}
		q := regexp.QuoteMeta(t)
		fmt.Fprintf(&b, `<%s>.*?</%s>`, q, q)
	}
	b.WriteString(`\s*$`)
	re := regexp.MustCompile(b.String())
	return func(_, completion, _ string) float64 {
		for _, t := range tags {
			if strings.Count(completion, "<"+t+">") != 1 || strings.Count(completion, "</"+t+">") != 1 {
				return 0
			}
		}
		if re.MatchString(completion) {
			return 1
		}
		return 0
	}
}

// TagCount returns a Func that gives partial credit for tag structure: each
// opening and each closing tag that occurs exactly once adds
// 1/(2·len(tags)), so a completion with every tag once scores 1. It is a
// denser signal than TagStructure early in training.
func TagCount(tags ...string) Func {
	return func(_, completion, _ string) float64 {
		if len(tags) == 0 {
			return 0
		}
		unit := 1 / float64(2*len(tags))
		score := 0.0
		for _, t := range tags {
			if strings.Count(completion, "<"+t+">") == 1 {
				score += unit
			}
			if strings.Count(completion, "</"+t+">") == 1 {
				score += unit
			}
		}
		return score
	}
}

// ExactMatch returns a Func that scores 1 when the completion equals the
// answer after trimming white space at both ends, and 0 otherwise.
func ExactMatch() Func {
	return func(_, completion, answer string) float64 {
		if strings.TrimSpace(completion) == strings.TrimSpace(answer) {
			return 1
		}
		return 0
	}
}

// Normalize lower-cases s, drops punctuation and symbols, and collapses
// runs of white space to one space, trimming both ends:
// "  The  Answer: Paris! " becomes "the answer paris".
func Normalize(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
		case unicode.IsPunct(r) || unicode.IsSymbol(r):
			// dropped
		default:
			if space {
				b.WriteByte(' ')
				space = false
			}
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// NormalizedMatch returns a Func that scores 1 when Normalize(completion)
// equals Normalize(answer), and 0 otherwise.
func NormalizedMatch() Func {
	return func(_, completion, answer string) float64 {
		if Normalize(completion) == Normalize(answer) {
			return 1
		}
		return 0
	}
}

// NumericMatch returns a Func that scores 1 when the last number in the
// completion (see LastNumber) is within tol of the number in the answer
// (see ParseNumber), and 0 otherwise, including when either has no number.
// Use tol 0 for exact integer answers.
func NumericMatch(tol float64) Func {
	return func(_, completion, answer string) float64 {
		want, err := ParseNumber(answer)
		if err != nil {
			return 0
		}
		got, ok := LastNumber(completion)
		if !ok {
			return 0
		}
		d := got - want
		if d < 0 {
			d = -d
		}
		if d <= tol {
			return 1
		}
		return 0
	}
}

// OnTag returns a Func that scores f on the content of the completion's
// <tag>…</tag> (see TagContent); a completion without the tag scores 0.
func OnTag(tag string, f Func) Func {
	return func(p, completion, a string) float64 {
		content, ok := TagContent(completion, tag)
		if !ok {
			return 0
		}
		return f(p, content, a)
	}
}

// LengthPenalty returns a Func that scores -perRune for every rune of the
// completion beyond limit, and 0 for completions of at most limit runes.
// Runes stand in for tokens because rewards do not see the tokenizer.
func LengthPenalty(limit int, perRune float64) Func {
	return func(_, completion, _ string) float64 {
		n := utf8.RuneCountInString(completion)
		if n <= limit {
			return 0
		}
		return -perRune * float64(n-limit)
	}
}
