package reward

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// numberRE finds numbers written the way people and models write them:
// an optional sign, an optional currency sign, digits with optional
// thousands commas, and an optional decimal part ("-$1,234.50", "3.", ".5").
var numberRE = regexp.MustCompile(`[-−]?\$?(?:\d[\d,]*(?:\.\d*)?|\.\d+)`)

// ParseNumber parses one number written in s, tolerating surrounding white
// space, a currency sign ($ before or after the sign), thousands commas, a
// trailing percent sign and trailing punctuation (".", ",", "!", "?", ":",
// ";"): "$1,234.00" → 1234, "-7." → -7, "50%" → 50. It returns an error
// naming s when s holds no number or more than one thing.
func ParseNumber(s string) (float64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimRight(t, ".,!?:;")
	t = strings.TrimSuffix(t, "%")
	t = strings.TrimSpace(t)
	if t == "" {
		return 0, fmt.Errorf("reward: parse number %q: no number", s)
	}
	loc := numberRE.FindStringIndex(t)
	if loc == nil || loc[0] != 0 || loc[1] != len(t) {
		if strings.HasPrefix(t, "$") { // "$-5"
			if v, err := parseClean(strings.TrimPrefix(t, "$")); err == nil {
				return v, nil
			}
		}
		return 0, fmt.Errorf("reward: parse number %q: not a single number", s)
	}
	return parseClean(t)
}

// LastNumber returns the last number in text (the lenient extraction most
// math rewards use), parsed as by ParseNumber. ok is false when text has no
// digits.
func LastNumber(text string) (v float64, ok bool) {
	all := numberRE.FindAllStringIndex(text, -1)
	for i := len(all) - 1; i >= 0; i-- {
		start, end := all[i][0], all[i][1]
		tok := text[start:end]
		// A minus sign glued to a word or digit is a hyphen ("3-5", "x-2").
		if start > 0 && (tok[0] == '-' || strings.HasPrefix(tok, "−")) {
			if r, _ := utf8.DecodeLastRuneInString(text[:start]); unicode.IsLetter(r) || unicode.IsDigit(r) {
				_, size := utf8.DecodeRuneInString(tok)
				tok = tok[size:]
			}
		}
		if v, err := parseClean(tok); err == nil {
			return v, true
		}
	}
	return 0, false
}

// parseClean parses a token matched by numberRE.
func parseClean(tok string) (float64, error) {
	tok = strings.Replace(tok, "−", "-", 1)
	tok = strings.Replace(tok, "$", "", 1)
	tok = strings.ReplaceAll(tok, ",", "")
	tok = strings.TrimSuffix(tok, ".")
	if tok == "" || tok == "-" {
		return 0, fmt.Errorf("reward: parse number: empty")
	}
	v, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return 0, fmt.Errorf("reward: parse number %q: %w", tok, err)
	}
	return v, nil
}
