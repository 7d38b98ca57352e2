package poker_test

import (
	"fmt"

	"github.com/grpokit/grpokit/envs/poker"
)

func ExampleClassify() {
	h, err := poker.ParseHand("5h 4h 3h 2h Ah")
	if err != nil {
		fmt.Println(err)
		return
	}
	c := poker.Classify(h)
	fmt.Println(c, c.Weight())
	fmt.Println(poker.Reward("", "straight flush", c.String()))
	// Output:
	// straight flush 3
	// 3
}

func ExampleSampler() {
	s := poker.NewSampler(1)
	for range 3 {
		ex := s.Next()
		fmt.Println(poker.Classify(ex.Hand) == ex.Class, ex.Answer == ex.Class.String())
	}
	// Output:
	// true true
	// true true
	// true true
}
