package gsm8k

import (
	"strings"
	"testing"
)

func TestEvaluate(t *testing.T) {
	exs := []Example{{Answer: "18"}, {Answer: "1234"}, {Answer: "-3"}, {Answer: "7"}}
	comps := []string{
		"<reasoning>\n9*2\n</reasoning>\n<answer>\n18\n</answer>\n", // both right, strict format
		"The total is $1,234.00.",                                   // lenient only
		"<answer>-3</answer> or maybe 4",                            // strict only
		"no idea",                                                   // neither
	}
	rep, err := Evaluate(exs, comps)
	if err != nil {
		t.Fatal(err)
	}
	want := Report{N: 4, StrictCorrect: 2, LenientCorrect: 2, StrictFormat: 1, StrictAccuracy: 0.5, LenientAccuracy: 0.5}
	if rep != want {
		t.Errorf("Evaluate = %+v, want %+v", rep, want)
	}
	if got := rep.String(); got != "gsm8k: n=4 strict 50.0% (2) lenient 50.0% (2) strict format 1\n" {
		t.Errorf("String = %q", got)
	}
	if _, err := Evaluate(exs, comps[:1]); err == nil || !strings.Contains(err.Error(), "1 completions for 4 examples") {
		t.Errorf("mismatch error = %v", err)
	}
	if _, err := Evaluate([]Example{{Answer: "x"}}, []string{""}); err == nil || !strings.Contains(err.Error(), `gold "x" is not a number`) {
		t.Errorf("bad gold error = %v", err)
	}
}
