package loss

import (
	"math"

	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
)

// vespoWeights returns VESPO's per-row gamma weight φ [B, 1], a constant
// (stop-gradient) that scales −A·logp:
//
//	s = clip(Σ_t m·clip(logRatio, −20, 20), ln 1e-8, 20), W = exp(s)
//	(k, λ) = (k₊, λ₊) if A ≥ 0 else (k₋, λ₋); λ ≥ 1e-4
//	φ = exp(λ + k·s − λ·W), with NaN and ±Inf replaced by 0
//
// φ(1) = 1, so on-policy VESPO is the plain policy gradient. The
// log-ratio is the token one whatever the importance-sampling level.
func vespoWeights(logRatio, mask, a *Node, v VESPOParams) *Node {
	logRatio, a = StopGradient(logRatio), StopGradient(a)
	s := ReduceSum(Mul(ClipScalar(logRatio, -20, 20), mask), -1)
	s = ExpandAxes(ClipScalar(s, math.Log(1e-8), 20), -1) // [B, 1]
	nonNeg := GreaterOrEqual(a, ZerosLike(a))
	k := Where(nonNeg, constLike(a, v.KPos), constLike(a, v.KNeg))
	lambda := MaxScalar(Where(nonNeg, constLike(a, v.LambdaPos), constLike(a, v.LambdaNeg)), 1e-4)
	phi := Exp(Sub(Add(lambda, Mul(k, s)), Mul(lambda, Exp(s))))
	return StopGradient(Where(IsFinite(phi), phi, ZerosLike(phi)))
}
