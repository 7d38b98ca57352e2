package grpo

import "github.com/grpokit/grpokit/internal/optim"

// gradientOptimizer is GoMLX's Adam taking gradients directly, the
// reference the in-place update (update.go) is checked against.
type gradientOptimizer = optim.GradientOptimizer

// newOptimizer returns GoMLX's AdamW configured from c, keeping its state
// under scope.
func newOptimizer(c Config, scope string) (gradientOptimizer, error) {
	return optim.NewAdamW(scope, optim.AdamWConfig{
		LearningRate: c.LearningRate, Beta1: c.AdamBeta1, Beta2: c.AdamBeta2,
		Epsilon: c.AdamEpsilon, WeightDecay: c.WeightDecay,
	})
}
