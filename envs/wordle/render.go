package wordle

import (
	"fmt"
	"strings"
)

// Turn is one guess of a game and the feedback it got.
type Turn struct {
	Guess    string // lower case; for an invalid move, what the policy wrote
	Feedback Feedback
	// Invalid is empty for a scored guess; otherwise it says why the move
	// was rejected (the turn is lost and Feedback is meaningless).
	Invalid string
}

// Describe explains a turn's feedback in plain English, one clause per
// letter, e.g. for CRANE against ROBOT: "C is not in the word; R is in the
// word but not in position 2; A is not in the word; ...". A gray letter
// whose copies are green or yellow elsewhere in the same guess is
// described as "no further X" because the word does have that letter.
func Describe(t Turn) string {
	if t.Invalid != "" {
		return "not accepted (" + t.Invalid + "); the turn is lost."
	}
	g := upper(t.Guess)
	clauses := make([]string, 0, WordLen)
	for i := 0; i < len(g) && i < WordLen; i++ {
		ch := g[i : i+1]
		switch t.Feedback[i] {
		case Green:
			clauses = append(clauses, fmt.Sprintf("%s is in position %d", ch, i+1))
		case Yellow:
			clauses = append(clauses, fmt.Sprintf("%s is in the word but not in position %d", ch, i+1))
		default:
			if hasColoredCopy(g, t.Feedback, g[i]) {
				clauses = append(clauses, fmt.Sprintf("%s in position %d: there is no further %s in the word", ch, i+1, ch))
			} else {
				clauses = append(clauses, fmt.Sprintf("%s is not in the word", ch))
			}
		}
	}
	return strings.Join(clauses, "; ") + "."
}

func hasColoredCopy(g string, f Feedback, c byte) bool {
	for j := 0; j < len(g) && j < WordLen; j++ {
		if g[j] == c && f[j] != Gray {
			return true
		}
	}
	return false
}

// Instructions is the fixed part of every Wordle prompt.
const Instructions = "You are playing Wordle. Find the secret five-letter English word in at most 6 guesses. " +
	"After each guess you learn, for every letter, whether it is in the right position, " +
	"in the word but in another position, or not in the word.\n" +
	"First think inside <think>...</think>, then give exactly one five-letter word inside <guess>...</guess>."

// RenderPrompt returns the prompt for the next guess: the instructions, the
// guesses so far with their feedback in plain English, and which guess
// comes next.
func RenderPrompt(history []Turn) string {
	var b strings.Builder
	b.WriteString(Instructions)
	b.WriteString("\n\n")
	if len(history) == 0 {
		b.WriteString("No guesses yet.\n")
	}
	for i, t := range history {
		if t.Invalid != "" {
			fmt.Fprintf(&b, "Guess %d: %s\n", i+1, Describe(t))
			continue
		}
		fmt.Fprintf(&b, "Guess %d: %s → %s\n", i+1, upper(t.Guess), Describe(t))
	}
	fmt.Fprintf(&b, "Make guess %d of %d.", len(history)+1, MaxTurns)
	return b.String()
}
