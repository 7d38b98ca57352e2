// Package optim builds the GoMLX AdamW that the SFT trainer steps (and
// grpo's tests take as the reference for its in-place update): an
// optimizer updated from gradients the trainer computed, and clipped,
// itself.
package optim

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
)

// GradientOptimizer is the part of GoMLX's Adam the trainers use: an
// update from gradients they computed themselves.
type GradientOptimizer interface {
	UpdateGraphWithGradients(ctx *mlctx.Context, grads []*graph.Node, lossDType dtypes.DType)
}

// AdamWConfig holds AdamW's settings: the (starting) learning rate, β₁,
// β₂, ε and the decoupled weight decay λ.
type AdamWConfig struct {
	LearningRate, Beta1, Beta2, Epsilon, WeightDecay float64
}

// NewAdamW returns GoMLX's Adam configured as AdamW from c, keeping its
// state (moments and step count) under scope. The learning rate it starts
// with is replaced every step by the caller's schedule.
func NewAdamW(scope string, c AdamWConfig) (GradientOptimizer, error) {
	opt := optimizers.Adam().
		Scope(scope).
		LearningRate(c.LearningRate).
		Betas(c.Beta1, c.Beta2).
		Epsilon(c.Epsilon).
		WeightDecay(c.WeightDecay).
		Done()
	g, ok := opt.(GradientOptimizer)
	if !ok {
		return nil, fmt.Errorf("GoMLX's Adam (%T) cannot take gradients directly", opt)
	}
	return g, nil
}
