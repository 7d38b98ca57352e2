package gsm8k_test

import (
	"fmt"

	"github.com/grpokit/grpokit/envs/gsm8k"
)

func ExampleStrictAnswer() {
	v, err := gsm8k.StrictAnswer("<reasoning>\n9 * 2\n</reasoning>\n<answer>\n$1,234.00\n</answer>\n")
	fmt.Println(v, err)
	_, err = gsm8k.StrictAnswer("The answer is 18.")
	fmt.Println(err)
	v, err = gsm8k.LenientAnswer("The answer is 18.")
	fmt.Println(v, err)
	// Output:
	// 1234 <nil>
	// gsm8k: no <answer>…</answer> block
	// 18 <nil>
}
