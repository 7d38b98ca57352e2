package gsm8k

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/grpokit/grpokit/reward"
)

// Errors from answer extraction; test with errors.Is.
var (
	ErrNoAnswerTag = errors.New("gsm8k: no <answer>…</answer> block")
	ErrNoNumber    = errors.New("gsm8k: answer has no number")
)

var (
	// The seed's strict pattern, with reasoning and answer allowed to span
	// lines ((?s)) and one optional extra newline at the end, which Python's
	// "$" allows.
	strictRE = regexp.MustCompile(`(?s)^<reasoning>\n.*?\n</reasoning>\n<answer>\n.*?\n</answer>\n\n?$`)
	// The seed's soft pattern, anchored at both ends: only white space may
	// follow </answer>.
	softRE = regexp.MustCompile(`(?s)^\s*<reasoning>.*?</reasoning>\s*<answer>.*?</answer>\s*$`)
	intRE  = regexp.MustCompile(`^-?\d+$`)
)

// XMLAnswer is the seed's extract_xml_answer: the text after the last
// "<answer>" and before the next "</answer>", trimmed. Like the seed it
// returns the whole trimmed text when the tags are missing.
func XMLAnswer(text string) string {
	if i := strings.LastIndex(text, "<answer>"); i >= 0 {
		text = text[i+len("<answer>"):]
	}
	if j := strings.Index(text, "</answer>"); j >= 0 {
		text = text[:j]
	}
	return strings.TrimSpace(text)
}

// StrictAnswer extracts the answer the strict way: the completion must
// hold an <answer>…</answer> block, and the answer is the last number in
// it ("$1,234.00" → 1234). Errors wrap ErrNoAnswerTag or ErrNoNumber.
func StrictAnswer(completion string) (float64, error) {
	content, ok := reward.TagContent(completion, "answer")
	if !ok {
		return 0, ErrNoAnswerTag
	}
	v, ok := reward.LastNumber(content)
	if !ok {
		return 0, fmt.Errorf("%w: <answer> holds %q", ErrNoNumber, content)
	}
	return v, nil
}

// LenientAnswer extracts the answer the lenient way: the last number
// anywhere in the completion. The error wraps ErrNoNumber.
func LenientAnswer(completion string) (float64, error) {
	v, ok := reward.LastNumber(completion)
	if !ok {
		return 0, ErrNoNumber
	}
	return v, nil
}

// CorrectnessReward is the seed's correctness_reward_func: 2.0 when
// XMLAnswer(completion) equals the gold answer string exactly, else 0.
func CorrectnessReward(_, completion, answer string) float64 {
	if XMLAnswer(completion) == answer {
		return 2
	}
	return 0
}

// IntReward is the seed's int_reward_func: 0.5 when XMLAnswer(completion)
// is an integer (digits, with an optional leading minus), else 0.
func IntReward(_, completion, _ string) float64 {
	if intRE.MatchString(XMLAnswer(completion)) {
		return 0.5
	}
	return 0
}

// StrictFormatReward is the seed's strict_format_reward_func: 0.5 for
// exactly "<reasoning>\n…\n</reasoning>\n<answer>\n…\n</answer>\n" with each
// tag once, else 0.
func StrictFormatReward(_, completion, _ string) float64 {
	for _, tag := range []string{"<reasoning>", "</reasoning>", "<answer>", "</answer>"} {
		if strings.Count(completion, tag) != 1 {
			return 0
		}
	}
	if strictRE.MatchString(completion) {
		return 0.5
	}
	return 0
}

// SoftFormatReward is the seed's soft_format_reward_func: 0.5 for a
// <reasoning> block followed by an <answer> block, with only white space
// around them, else 0.
func SoftFormatReward(_, completion, _ string) float64 {
	if softRE.MatchString(completion) {
		return 0.5
	}
	return 0
}

// XMLCountReward is the seed's xmlcount_reward_func (count_xml): 0.125 for
// each of "<reasoning>\n", "\n</reasoning>\n", "\n<answer>\n" and
// "\n</answer>" that occurs exactly once, minus 0.001 per character
// (rune) after the closing answer tag.
func XMLCountReward(_, text, _ string) float64 {
	count := 0.0
	if strings.Count(text, "<reasoning>\n") == 1 {
		count += 0.125
	}
	if strings.Count(text, "\n</reasoning>\n") == 1 {
		count += 0.125
	}
	if strings.Count(text, "\n<answer>\n") == 1 {
		count += 0.125
		parts := strings.Split(text, "\n</answer>\n")
		count -= float64(utf8.RuneCountInString(parts[len(parts)-1])) * 0.001
	}
	if strings.Count(text, "\n</answer>") == 1 {
		count += 0.125
		parts := strings.Split(text, "\n</answer>")
		count -= float64(utf8.RuneCountInString(parts[len(parts)-1])-1) * 0.001
	}
	return count
}

// Rewards returns the seed's five rewards in its order, each with weight 1
// (their values already carry the seed's scale).
func Rewards() []reward.Named {
	return []reward.Named{
		{Name: "xmlcount", Weight: 1, Scorer: reward.Func(XMLCountReward)},
		{Name: "soft_format", Weight: 1, Scorer: reward.Func(SoftFormatReward)},
		{Name: "strict_format", Weight: 1, Scorer: reward.Func(StrictFormatReward)},
		{Name: "int", Weight: 1, Scorer: reward.Func(IntReward)},
		{Name: "correctness", Weight: 1, Scorer: reward.Func(CorrectnessReward)},
	}
}
