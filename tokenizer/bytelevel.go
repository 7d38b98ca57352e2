package tokenizer

import "strings"

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to
// U+0100 onwards, so every byte is one visible rune.
var (
	byteToRune [256]rune
	byteToStr  [256]string
	runeToByte = map[rune]byte{}
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		byteToStr[b] = string(byteToRune[b])
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteLevelEncode maps the bytes of s into GPT-2's alphabet.
func byteLevelEncode(s string) string {
	var b strings.Builder
	b.Grow(len(s) * 2)
	for i := 0; i < len(s); i++ {
		b.WriteString(byteToStr[s[i]])
	}
	return b.String()
}

// byteLevelDecode maps one token back to bytes; a token with a rune outside
// the alphabet (an added token such as "<|im_start|>" is inside it, but
// "é…" tokens need not be) is kept as its raw UTF-8, as Rust does.
func byteLevelDecode(tok string, dst []byte) []byte {
	start := len(dst)
	for _, r := range tok {
		b, ok := runeToByte[r]
		if !ok {
			return append(dst[:start], tok...)
		}
		dst = append(dst, b)
	}
	return dst
}
