package wordle

import (
	"errors"
	"fmt"
	"strings"

	"github.com/grpokit/grpokit/reward"
)

// Errors from the action parser; test with errors.Is.
var (
	// ErrNoGuess: the reply has no <guess>…</guess> block.
	ErrNoGuess = errors.New("wordle: no <guess>…</guess> in the reply")
	// ErrNotWord: the guess is not five ASCII letters.
	ErrNotWord = errors.New("wordle: guess is not five letters")
	// ErrUnknownWord: the guess is five letters but not an allowed word.
	ErrUnknownWord = errors.New("wordle: not an allowed word")
)

// ParseGuess reads the policy's move from its reply: the content of the
// last <guess>…</guess> block, trimmed, any case. The move must be an
// allowed five-letter word (see ParseWord); it is returned in lower case.
func ParseGuess(reply string) (string, error) {
	content, ok := reward.TagContent(reply, "guess")
	if !ok {
		return "", ErrNoGuess
	}
	return ParseWord(content)
}

// ParseWord checks that s, trimmed of white space, is an allowed
// five-letter word and returns it in lower case. Errors wrap ErrNotWord or
// ErrUnknownWord and quote the word.
func ParseWord(s string) (string, error) {
	t := strings.TrimSpace(s)
	n, err := normalize(t)
	if err != nil {
		return "", fmt.Errorf("%w: %q", ErrNotWord, t)
	}
	if !lists().allowedSet[n] {
		return "", fmt.Errorf("%w: %q", ErrUnknownWord, n)
	}
	return n, nil
}

// formatReward checks the reply's shape: <think>…</think> then
// <guess>…</guess>, nothing else.
var formatReward = reward.TagStructure("think", "guess")
