package loss

import (
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
)

// cispoTerm is CISPO's policy term (MiniMax-M1): the importance weight is
// capped at epsHigh (an absolute cap, not 1+ε) and stopped, so the
// gradient flows only through logp:
//
//	p = −sg(min(w, ε_high)) · A · logp
func cispoTerm(w, a, logp *Node, epsHigh float64) *Node {
	capped := StopGradient(MinScalar(w, epsHigh))
	return Neg(Mul(Mul(capped, a), logp))
}
