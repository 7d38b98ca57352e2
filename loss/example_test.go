package loss_test

import (
	"fmt"

	"github.com/grpokit/grpokit/loss"
)

// Four completions of one prompt, two of them right: each advantage is the
// reward minus the group's mean, over the group's standard deviation.
func ExampleGroupAdvantages() {
	adv, err := loss.GroupAdvantages([]float64{1, 0, 1, 0}, 4, loss.ScaleGroup)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.4f\n", adv.Values)
	// Output: [0.8659 -0.8659 0.8659 -0.8659]
}
