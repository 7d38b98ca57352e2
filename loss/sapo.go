package loss

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
)

// sapoTerm is SAPO's soft gate (Soft Adaptive Policy Optimization): a
// sigmoid of the ratio replaces the hard clip,
//
//	τ = τ₊ if A > 0 else τ₋ (A = 0 takes τ₋)
//	p = −(4/τ) · sigmoid(τ·(w − 1)) · A
//
// whose gradient at w = 1 equals the unclipped surrogate's.
func sapoTerm(w, a *Node, tauPos, tauNeg float64) *Node {
	tau := Where(GreaterThan(a, ZerosLike(a)), constLike(a, tauPos), constLike(a, tauNeg))
	tau = ConvertDType(tau, dtypes.Float32)
	gate := Div(MulScalar(Sigmoid(Mul(tau, AddScalar(w, -1))), 4), tau)
	return Neg(Mul(gate, a))
}
