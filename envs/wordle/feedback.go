package wordle

import (
	"fmt"
	"strings"
)

// WordLen is the length of every Wordle word.
const WordLen = 5

// Color is the feedback for one letter of a guess.
type Color uint8

// The colors. Their numeric values are the base-3 digits of Feedback.Code.
const (
	Gray   Color = iota // the letter is not in the word (or not that many times)
	Yellow              // the letter is in the word, in another position
	Green               // the letter is in this position
)

// Feedback is the color of each of the five letters of a guess.
type Feedback [WordLen]Color

// NumCodes is the number of distinct feedback codes, 3^5.
const NumCodes = 243

// Code returns the feedback as a base-3 number in [0, 243): letter i's
// color is digit i (least significant first). All green is 242.
func (f Feedback) Code() int {
	code := 0
	for i := WordLen - 1; i >= 0; i-- {
		code = code*3 + int(f[i])
	}
	return code
}

// Won reports whether every letter is Green.
func (f Feedback) Won() bool { return f == Feedback{Green, Green, Green, Green, Green} }

// String writes G for green, Y for yellow and . for gray: "..Y.G".
func (f Feedback) String() string {
	var b [WordLen]byte
	for i, c := range f {
		b[i] = ".YG"[c%3]
	}
	return string(b[:])
}

// ParseFeedback reads the form String writes ("..Y.G"; also accepts
// '-', '_' or 'B' for gray and lower case).
func ParseFeedback(s string) (Feedback, error) {
	var f Feedback
	if len(s) != WordLen {
		return f, fmt.Errorf("wordle: feedback %q: want %d characters", s, WordLen)
	}
	for i := 0; i < WordLen; i++ {
		switch s[i] {
		case 'G', 'g':
			f[i] = Green
		case 'Y', 'y':
			f[i] = Yellow
		case '.', '-', '_', 'B', 'b':
			f[i] = Gray
		default:
			return f, fmt.Errorf("wordle: feedback %q: bad character %q at %d", s, s[i], i+1)
		}
	}
	return f, nil
}

// Score returns the feedback for guess when the secret is answer, with the
// game's rule for repeated letters: greens first, then yellows from left to
// right only while the answer has unmatched copies of the letter left. Both
// words must be five ASCII letters (any case).
func Score(guess, answer string) (Feedback, error) {
	g, err := normalize(guess)
	if err != nil {
		return Feedback{}, err
	}
	a, err := normalize(answer)
	if err != nil {
		return Feedback{}, err
	}
	return score(g, a), nil
}

// score is Score for two valid lower-case words.
func score(guess, answer string) Feedback {
	var f Feedback
	var left [26]int8 // unmatched letters of the answer
	for i := 0; i < WordLen; i++ {
		if guess[i] == answer[i] {
			f[i] = Green
		} else {
			left[answer[i]-'a']++
		}
	}
	for i := 0; i < WordLen; i++ {
		if f[i] == Green {
			continue
		}
		if c := guess[i] - 'a'; left[c] > 0 {
			f[i] = Yellow
			left[c]--
		}
	}
	return f
}

// Consistent reports whether word could still be the answer after guess
// received fb: exactly when scoring guess against word gives fb. Invalid
// words are never consistent.
func Consistent(word, guess string, fb Feedback) bool {
	f, err := Score(guess, word)
	return err == nil && f == fb
}

// normalize lower-cases a five-letter ASCII word or returns an error.
func normalize(w string) (string, error) {
	if len(w) != WordLen {
		return "", fmt.Errorf("wordle: %q is not %d letters", w, WordLen)
	}
	var b [WordLen]byte
	for i := 0; i < WordLen; i++ {
		c := w[i] | 0x20 // ASCII lower case
		if c < 'a' || c > 'z' {
			return "", fmt.Errorf("wordle: %q is not %d letters", w, WordLen)
		}
		b[i] = c
	}
	return string(b[:]), nil
}

// upper is strings.ToUpper, named for the rendering code.
func upper(s string) string { return strings.ToUpper(s) }
