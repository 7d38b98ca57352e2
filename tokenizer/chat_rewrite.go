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

// findKeyword finds word kw at bracket depth 0 outside strings.
func findKeyword(s, kw string) int {
	depth := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			i = skipString(s, i)
			continue
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case depth == 0 && strings.HasPrefix(s[i:], kw) &&
			(i == 0 || !isIdentByte(s[i-1])) &&
			(i+len(kw) == len(s) || !isIdentByte(s[i+len(kw)])):
			return i
		}
		i++
	}
	return -1
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// matchBracket returns the index of the bracket closing s[i].
func matchBracket(s string, i int) int {
	depth := 0
	for k := i; k < len(s); {
		switch s[k] {
		case '\'', '"':
			k = skipString(s, k)
			continue
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return k
			}
		}
		k++
	}
	return -1
}

// splitTop splits s at sep at depth 0 outside strings.
func splitTop(s string, sep byte) []string {
	var parts []string
	depth, last := 0, 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			i = skipString(s, i)
			continue
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == sep && depth == 0:
			parts = append(parts, s[last:i])
			last = i + 1
		}
		i++
	}
	return append(parts, s[last:])
}
