package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// lossyUTF8 returns s with every invalid UTF-8 sequence replaced by U+FFFD
// exactly as Rust's String::from_utf8_lossy does: one replacement per
// "maximal subpart" of an ill-formed sequence (Unicode §3.9), so a truncated
// 3-byte sequence gives one U+FFFD while two stray 0xFF bytes give two. The
// Rust tokenizers library only ever sees Rust Strings, so this is how Go
// callers' invalid bytes reach it too.
func lossyUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			b.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || size > 1 {
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		b.WriteString("\uFFFD")
		i += invalidPrefixLen(s[i:])
	}
	return b.String()
}

// invalidPrefixLen is the length of the maximal subpart of the ill-formed
// sequence at the start of s (at least 1).
func invalidPrefixLen(s string) int {
	c := s[0]
	need := 0
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(s); k++ {
		b := s[n]
		if k == 0 {
			if b < lo || b > hi {
				break
			}
		} else if b < 0x80 || b > 0xBF {
			break
		}
		n++
	}
	return n
}

// lossyBytes is lossyUTF8 for a byte slice.
func lossyBytes(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return lossyUTF8(string(b))
}
