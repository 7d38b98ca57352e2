package reward_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/grpokit/grpokit/reward"
)

func ExampleFunc() {
	exact := reward.Func(func(_, completion, answer string) float64 {
		if strings.TrimSpace(completion) == answer {
			return 1
		}
		return 0
	})
	fmt.Println(exact("What is 2+2?", " 4\n", "4"))
	fmt.Println(exact.Score(reward.Sample{Completion: "5", Answer: "4"}))
	// Output:
	// 1
	// 0
}

func ExampleScale() {
	format := reward.TagStructure("think", "guess")
	half := reward.Scale(0.5, format)
	fmt.Println(half("", "<think>E is common</think><guess>crane</guess>", ""))
	// Output: 0.5
}

func ExampleEvaluator() {
	ev := &reward.Evaluator{Rewards: []reward.Named{
		{Name: "format", Weight: 0.5, Scorer: reward.TagStructure("answer")},
		{Name: "correct", Weight: 1, Scorer: reward.OnTag("answer", reward.NumericMatch(0))},
		{Name: "buggy", Weight: 1, Scorer: reward.Func(func(_, _, _ string) float64 { panic("bug") })},
	}}
	res, err := ev.Evaluate(context.Background(), []reward.Sample{
		{Completion: "<answer>$1,234</answer>", Answer: "1234"},
		{Completion: "1234", Answer: "1234"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Totals)
	for _, s := range res.Stats {
		fmt.Printf("%s mean=%.2f panics=%d\n", s.Name, s.Mean, s.Panics)
	}
	// Output:
	// [1.5 0]
	// format mean=0.50 panics=0
	// correct mean=0.50 panics=0
	// buggy mean=0.00 panics=2
}
