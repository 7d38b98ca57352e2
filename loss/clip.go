package loss

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
)

// clippedTerm is the PPO-style clipped surrogate of grpo, bnpo, dr_grpo,
// dapo and luspo (TRL 1.16):
//
//	c = clip(w, 1−ε, 1+ε_high)
//	w' = min(w, δ) when δ > 0 (two-sided clipping, INTELLECT-2), else w
//	p = −min(w'·A, c·A)
//
// c is formed from the uncapped w, as TRL does. It also returns the clip
// flags TRL logs, taken on w': low = [w' < 1−ε and A < 0], high = [w' >
// 1+ε_high and A > 0]. w is [B, C] or [B, 1], a [B, 1].
func clippedTerm(w, a *Node, eps, epsHigh, delta float64) (p, low, high *Node) {
	c := ClipScalar(w, 1-eps, 1+epsHigh)
	if delta > 0 {
		w = MinScalar(w, delta)
	}
	p = Neg(Min(Mul(w, a), Mul(c, a)))
	zero := ZerosLike(a)
	low = ConvertDType(LogicalAnd(LessThan(w, constLike(w, 1-eps)), LessThan(a, zero)), dtypes.Float32)
	high = ConvertDType(LogicalAnd(GreaterThan(w, constLike(w, 1+epsHigh)), GreaterThan(a, zero)), dtypes.Float32)
	return p, low, high
}
