package wordle_test

import (
	"fmt"

	"github.com/grpokit/grpokit/envs/wordle"
)

func ExampleScore() {
	fb, err := wordle.Score("speed", "abide")
	fmt.Println(fb, err)
	// Output: ..Y.Y <nil>
}

func ExampleGame() {
	g := wordle.NewGame()
	if err := g.Reset("cigar", []string{"crane"}); err != nil {
		fmt.Println(err)
		return
	}
	res, _ := g.Step("<think>C first; R and A move.</think><guess>cobra</guess>")
	fmt.Println(res.Message)
	fmt.Printf("%.1f %v\n", res.Reward, res.Done)
	res, _ = g.Step("<think>Fits.</think><guess>cigar</guess>")
	fmt.Printf("%.1f %v %v\n", res.Reward, res.Done, res.Won)
	// Output:
	// C is in position 1; O is not in the word; B is not in the word; R is in the word but not in position 4; A is in the word but not in position 5.
	// 1.1 false
	// 2.7 true true
}
