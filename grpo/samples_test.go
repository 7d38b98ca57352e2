package grpo

import (
	"strings"
	"testing"

	"github.com/grpokit/grpokit/reward"
)

// TestPrintSamples: the table of completions (TRL's printed sample) has a
// row per completion with each reward ("n/a" where it did not apply) and
// the advantage to 2 decimals; long texts wrap in their column and are cut
// in the middle, keeping a prompt's end and a completion's start and end.
func TestPrintSamples(t *testing.T) {
	long := "You are a careful assistant. Think step by step and check your work.\nQuestion: Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?"
	answer := "In April she sold 48 clips.\nIn May she sold 48 / 2 = 24 clips.\nAltogether she sold 48 + 24 = 72 clips.\nLet me check: 48 + 24 is 72.\nYes.\nThe answer is 72."
	// Seven lines: the first four, "…", the last.
	answer7 := strings.Replace(answer, "Yes.", "Yes.\nSo:", 1)
	rows := []*row{
		{Prompt: long, Completion: answer, Rewards: []float64{1, 0.5}, Advantage: 1.2345},
		{Prompt: long, Completion: answer7, Rewards: []float64{1, reward.NotApplicable()}, Advantage: -0.5},
		{Prompt: "say\tcat", Completion: "dog\n\n", Rewards: []float64{-12.5, 0}, Advantage: 0},
	}
	var b strings.Builder
	printSamples(&b, 7, rows, []string{"correct", "format"}, nil, false, 1)
	want := `completions of step 7 (all; 3 in the generation batch)
+----------------------------------+--------------------------------------------------+---------+--------+-----------+
| prompt                           | completion                                       | correct | format | advantage |
+==================================+==================================================+=========+========+===========+
| You are a careful assistant.     | In April she sold 48 clips.                      |    1.00 |   0.50 |      1.23 |
| Think step by step and check     | In May she sold 48 / 2 = 24 clips.               |         |        |           |
| your work.                       | Altogether she sold 48 + 24 = 72 clips.          |         |        |           |
| …                                | Let me check: 48 + 24 is 72.                     |         |        |           |
| then she sold half as many clips | Yes.                                             |         |        |           |
| in May. How many clips did       | The answer is 72.                                |         |        |           |
| Natalia sell altogether in April |                                                  |         |        |           |
| and May?                         |                                                  |         |        |           |
+----------------------------------+--------------------------------------------------+---------+--------+-----------+
| You are a careful assistant.     | In April she sold 48 clips.                      |    1.00 |    n/a |     -0.50 |
| Think step by step and check     | In May she sold 48 / 2 = 24 clips.               |         |        |           |
| your work.                       | Altogether she sold 48 + 24 = 72 clips.          |         |        |           |
| …                                | Let me check: 48 + 24 is 72.                     |         |        |           |
| then she sold half as many clips | …                                                |         |        |           |
| in May. How many clips did       | The answer is 72.                                |         |        |           |
| Natalia sell altogether in April |                                                  |         |        |           |
| and May?                         |                                                  |         |        |           |
+----------------------------------+--------------------------------------------------+---------+--------+-----------+
| say cat                          | dog                                              |  -12.50 |   0.00 |      0.00 |
+----------------------------------+--------------------------------------------------+---------+--------+-----------+
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}

	// One row per prompt, then 1 of those 2 drawn; 0 prints nothing.
	one := 1
	b.Reset()
	printSamples(&b, 7, rows, []string{"correct", "format"}, &one, true, 1)
	if got := b.String(); !strings.HasPrefix(got, "completions of step 7 (1 drawn at random of 2 prompts; 3 in the generation batch)\n") ||
		strings.Count(got, "\n+---") != 2 {
		t.Errorf("one of the unique prompts:\n%s", got)
	}
	zero := 0
	b.Reset()
	printSamples(&b, 7, rows, []string{"correct", "format"}, &zero, false, 1)
	if b.Len() != 0 {
		t.Errorf("num_completions_to_print 0 printed:\n%s", b.String())
	}
}
