package tokenizer

import (
	"regexp"
	"strings"
)

// gonja parses Jinja's conditional expression "A if C else B" only as the
// whole of a {{ }} tag. HF templates also put it inside parentheses and
// call arguments (Gemma 3: '...' + (prefix if loop.first else "")) and on
// the right of {% set %}. rewriteInlineIf turns those into a call of the
// helper condFunc(C, A, B) before parsing. Both branches are evaluated
// (templates' branches have no side effects), the result is the same.
const condFunc = "__grpokit_cond"

func rewriteInlineIf(src string) string {
	if !strings.Contains(src, " if ") && !strings.Contains(src, "(if") {
		return src
	}
	var b strings.Builder
	for i := 0; i < len(src); {
		j := strings.IndexByte(src[i:], '{')
		if j < 0 || i+j+1 >= len(src) {
			b.WriteString(src[i:])
			break
		}
		j += i
		b.WriteString(src[i:j])
		kind := src[j+1]
		var closer string
		switch kind {
		case '{':
			closer = "}}"
		case '%':
			closer = "%}"
		case '#':
			end := strings.Index(src[j+2:], "#}")
			if end < 0 {
				b.WriteString(src[j:])
				return b.String()
			}
			b.WriteString(src[j : j+2+end+2])
			i = j + 2 + end + 2
			continue
		default:
			b.WriteByte('{')
			i = j + 1
			continue
		}
		end := findCloser(src, j+2, closer)
		if end < 0 {
			b.WriteString(src[j:])
			break
		}
		body := src[j+2 : end]
		if kind == '%' && isRawTag(body) {
			// Copy {% raw %}...{% endraw %} verbatim.
			k := strings.Index(src[end:], "endraw")
			if k < 0 {
				b.WriteString(src[j:])
				break
			}
			stop := findCloser(src, end+k, "%}")
			if stop < 0 {
				b.WriteString(src[j:])
				break
			}
			b.WriteString(src[j : stop+2])
			i = stop + 2
			continue
		}
		b.WriteString(src[j : j+2])
		b.WriteString(rewriteTagBody(body, kind == '%'))
		b.WriteString(closer)
		i = end + 2
	}
	return b.String()
}

func isRawTag(body string) bool {
	return strings.TrimSpace(strings.Trim(body, "-+ \t\n")) == "raw"
}

// findCloser returns the index of closer at or after i, skipping strings.
func findCloser(s string, i int, closer string) int {
	for i < len(s) {
		switch c := s[i]; {
		case c == '\'' || c == '"':
			i = skipString(s, i)
		case strings.HasPrefix(s[i:], closer):
			return i
		default:
			i++
		}
	}
	return -1
}

// skipString returns the index after the string literal starting at s[i].
func skipString(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == q {
			return i + 1
		}
	}
	return len(s)
}

var setLHS = regexp.MustCompile(`^(\s*[-+]?\s*set\s+[A-Za-z_][\w.]*\s*=)([^=].*)$`)

func rewriteTagBody(body string, block bool) string {
	if block {
		if m := setLHS.FindStringSubmatch(body); m != nil {
			rhs := m[2]
			trail := ""
			if t := strings.TrimRight(rhs, " \t\n"); strings.HasSuffix(t, "-") || strings.HasSuffix(t, "+") {
				trail = rhs[len(t)-1:]
				rhs = t[:len(t)-1]
			}
			return m[1] + rewriteTop(rewriteGroups(rhs)) + trail
		}
	}
	return rewriteGroups(body)
}

// rewriteGroups rewrites conditional expressions inside (...) and [...].
func rewriteGroups(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch c {
		case '\'', '"':
			k := skipString(s, i)
			b.WriteString(s[i:k])
			i = k
		case '(', '[':
			k := matchBracket(s, i)
			if k < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			inner := rewriteGroups(s[i+1 : k])
			parts := splitTop(inner, ',')
			for n, p := range parts {
				parts[n] = rewriteArg(p)
			}
			b.WriteByte(c)
			b.WriteString(strings.Join(parts, ","))
			b.WriteByte(s[k])
			i = k + 1
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

var kwArg = regexp.MustCompile(`^(\s*[A-Za-z_]\w*\s*=)([^=].*)$`)

func rewriteArg(p string) string {
	if m := kwArg.FindStringSubmatch(p); m != nil {
		return m[1] + rewriteTop(m[2])
	}
	return rewriteTop(p)
}

// rewriteTop turns a top-level "A if C [else B]" into condFunc(C, A, B).
func rewriteTop(e string) string {
	p := findKeyword(e, "if")
	if p < 0 || strings.TrimSpace(e[:p]) == "" {
		return e
	}
	a, rest := e[:p], e[p+2:]
	c, bExpr := rest, " none"
	if q := findKeyword(rest, "else"); q >= 0 {
		c, bExpr = rest[:q], rewriteTop(rest[q+4:])
	}
	return " " + condFunc + "(" + strings.TrimSpace(c) + ", " + strings.TrimSpace(a) + ", " + strings.TrimSpace(bExpr) + ") "
}

// scanTop calls stop for each byte of s from start on that is outside
// string literals, with depth the bracket nesting before that byte, and
// returns the first index where stop reports true, or -1.
func scanTop(s string, start int, stop func(i, depth int) bool) int {
	depth := 0
	for i := start; i < len(s); {
		if c := s[i]; c == '\'' || c == '"' {
			i = skipString(s, i)
			continue
		}
		if stop(i, depth) {
			return i
		}
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		}
		i++
	}
	return -1
}

// findKeyword finds word kw at bracket depth 0 outside strings.
func findKeyword(s, kw string) int {
	return scanTop(s, 0, func(i, depth int) bool {
		return depth == 0 && strings.HasPrefix(s[i:], kw) &&
			(i == 0 || !isIdentByte(s[i-1])) &&
			(i+len(kw) == len(s) || !isIdentByte(s[i+len(kw)]))
	})
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// matchBracket returns the index of the bracket closing s[i].
func matchBracket(s string, i int) int {
	return scanTop(s, i, func(k, depth int) bool {
		return depth == 1 && (s[k] == ')' || s[k] == ']' || s[k] == '}')
	})
}

// splitTop splits s at sep (not a bracket) at depth 0 outside strings.
func splitTop(s string, sep byte) []string {
	var parts []string
	last := 0
	scanTop(s, 0, func(i, depth int) bool {
		if s[i] == sep && depth == 0 {
			parts = append(parts, s[last:i])
			last = i + 1
		}
		return false
	})
	return append(parts, s[last:])
}
