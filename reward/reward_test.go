package reward

import (
	"math"
	"testing"
)

func TestCombinators(t *testing.T) {
	runes := Func(func(_, c, _ string) float64 { return float64(len(c)) })
	one := Func(func(_, _, _ string) float64 { return 1 })
	s := Sample{Prompt: "p", Completion: "abc", Answer: "a"}
	tests := []struct {
		name string
		sc   Scorer
		want float64
	}{
		{"func is scorer", runes, 3},
		{"scale", Scale(0.5, runes), 1.5},
		{"sum", Sum(runes, one, Scale(-2, one)), 2},
		{"sum empty", Sum(), 0},
		{"weighted", Weighted(Named{"len", 2, runes}, Named{"one", -0.5, one}), 5.5},
		{"scorer func turn", ScorerFunc(func(s Sample) float64 { return float64(s.Turn) + 1 }), 1},
		{"safe passes", Safe(runes), 3},
		{"safe panic", Safe(func(_, _, _ string) float64 { panic("boom") }), 0},
		{"safe nan", Safe(func(_, _, _ string) float64 { return math.NaN() }), 0},
		{"safe inf", Safe(func(_, _, _ string) float64 { return math.Inf(-1) }), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.sc.Score(s); got != tc.want {
				t.Errorf("Score = %v, want %v", got, tc.want)
			}
		})
	}
}
