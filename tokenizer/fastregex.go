package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Hand-written matchers for the pre-tokenizer regexes that almost every
// byte-level model ships. They give the same spans as the regex (checked
// against regexp2 by TestFastMatchersAgreeWithRegexp2 and FuzzFastMatchers)
// at several times the speed of a backtracking engine. Any other pattern
// goes through regexp2.
const (
	// Llama 3 and GPT-4 (cl100k): numbers in groups of up to 3 digits.
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Qwen 2/2.5/3: single digits.
	qwen2Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

func fastMatcher(expr string) func(string, [][2]int) [][2]int {
	switch expr {
	case llama3Pattern:
		return func(s string, dst [][2]int) [][2]int { return gpt4Split(s, 3, dst) }
	case qwen2Pattern:
		return func(s string, dst [][2]int) [][2]int { return gpt4Split(s, 1, dst) }
	case gpt2Pattern:
		return gpt2Split
	}
	return nil
}

const (
	clsOther = iota // not letter, number or whitespace
	clsLetter
	clsNumber
	clsSpace
)

var asciiClass [128]uint8

func init() {
	for c := 0; c < 128; c++ {
		r := rune(c)
		switch {
		case unicode.IsLetter(r):
			asciiClass[c] = clsLetter
		case unicode.IsNumber(r):
			asciiClass[c] = clsNumber
		case unicode.IsSpace(r):
			asciiClass[c] = clsSpace
		}
	}
}

// classAt decodes the rune at s[i:] and returns its class and size.
func classAt(s string, i int) (rune, uint8, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return rune(c), asciiClass[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.IsLetter(r):
		return r, clsLetter, n
	case unicode.IsNumber(r):
		return r, clsNumber, n
	case unicode.IsSpace(r):
		return r, clsSpace, n
	}
	return r, clsOther, n
}

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[i] (which is '\”).
func contraction(s string, i int, fold bool) int {
	if i+1 >= len(s) {
		return 0
	}
	lower := func(c byte) byte {
		if fold && c >= 'A' && c <= 'Z' {
			return c + 32
		}
		return c
	}
	switch lower(s[i+1]) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && lower(s[i+2]) == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && lower(s[i+2]) == 'l' {
			return 3
		}
	}
	return 0
}

// spaceRunEnd returns the end of the whitespace run starting at i and the
// start of the last \r or \n inside it (-1 if none).
func spaceRunEnd(s string, i int) (end, lastNL int) {
	lastNL = -1
	for i < len(s) {
		_, cls, n := classAt(s, i)
		if cls != clsSpace {
			break
		}
		if s[i] == '\r' || s[i] == '\n' {
			lastNL = i
		}
		i += n
	}
	return i, lastNL
}

// whitespaceTail applies \s+(?!\S)|\s+ to the run s[i:end].
func whitespaceTail(s string, i, end int) int {
	if end == len(s) {
		return end
	}
	// Back off one rune so the next char is whitespace, if that leaves any.
	_, n := utf8.DecodeLastRuneInString(s[:end])
	if end-n > i {
		return end - n
	}
	return end
}

// gpt4Split implements llama3Pattern (maxDigits 3) and qwen2Pattern (1).
func gpt4Split(s string, maxDigits int, dst [][2]int) [][2]int {
	for i := 0; i < len(s); {
		start := i
		r, cls, n := classAt(s, i)
		switch {
		case r == '\'' && contraction(s, i, true) > 0:
			i += contraction(s, i, true)
		case cls == clsLetter:
			i = letterRun(s, i+n)
		case cls != clsNumber && r != '\r' && r != '\n' && i+n < len(s) && isLetterAt(s, i+n):
			i = letterRun(s, i+n)
		case cls == clsNumber:
			i += n
			for k := 1; k < maxDigits && i < len(s); k++ {
				_, c2, n2 := classAt(s, i)
				if c2 != clsNumber {
					break
				}
				i += n2
			}
		case cls == clsOther || (r == ' ' && i+1 < len(s) && otherAt(s, i+1)):
			if r == ' ' {
				i++
			}
			for i < len(s) {
				_, c2, n2 := classAt(s, i)
				if c2 != clsOther {
					break
				}
				i += n2
			}
			for i < len(s) && (s[i] == '\r' || s[i] == '\n') {
				i++
			}
		default: // whitespace
			end, lastNL := spaceRunEnd(s, i)
			if lastNL >= 0 {
				i = lastNL + 1
			} else {
				i = whitespaceTail(s, i, end)
			}
		}
		dst = append(dst, [2]int{start, i})
	}
	return dst
}

// gpt2Split implements gpt2Pattern (ByteLevel's use_regex).
func gpt2Split(s string, dst [][2]int) [][2]int {
	for i := 0; i < len(s); {
		start := i
		r, cls, _ := classAt(s, i)
		if r == '\'' && contraction(s, i, false) > 0 {
			i += contraction(s, i, false)
			dst = append(dst, [2]int{start, i})
			continue
		}
		j, c2 := i, cls
		if r == ' ' && i+1 < len(s) {
			_, c2, _ = classAt(s, i+1)
			if c2 != clsSpace {
				j = i + 1
			} else {
				c2 = clsSpace
			}
		}
		if j == i {
			c2 = cls
		}
		switch c2 {
		case clsLetter, clsNumber, clsOther:
			i = j
			for i < len(s) {
				_, c3, n3 := classAt(s, i)
				if c3 != c2 {
					break
				}
				i += n3
			}
		default:
			end, _ := spaceRunEnd(s, i)
			i = whitespaceTail(s, i, end)
		}
		dst = append(dst, [2]int{start, i})
	}
	return dst
}

func letterRun(s string, i int) int {
	for i < len(s) {
		_, cls, n := classAt(s, i)
		if cls != clsLetter {
			break
		}
		i += n
	}
	return i
}

func isLetterAt(s string, i int) bool { _, c, _ := classAt(s, i); return c == clsLetter }
func otherAt(s string, i int) bool    { _, c, _ := classAt(s, i); return c == clsOther }
