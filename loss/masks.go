package loss

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
)

// offPolicyMask is DeepSeek-V3.2's off-policy sequence mask, [B, 1]: a row
// is kept (1) when A ≥ 0 or its mean log(old/π) over the completion is at
// most threshold, and dropped (0) otherwise.
func offPolicyMask(logp, old, mask, a *Node, threshold float64) *Node {
	d := Mul(Sub(old, StopGradient(logp)), mask)
	n := MaxScalar(ReduceSum(mask, -1), 1.0)
	avg := ExpandAxes(Div(ReduceSum(d, -1), n), -1)
	keep := LogicalOr(GreaterOrEqual(a, ZerosLike(a)), LessOrEqual(avg, constLike(avg, threshold)))
	return ConvertDType(keep, dtypes.Float32)
}

// entropyBisections is the number of halvings HighEntropyMask takes; 64
// narrow any float32 interval of entropies to adjacent values.
const entropyBisections = 64

// HighEntropyMask is TRL's get_high_entropy_mask ("Beyond the 80/20
// Rule"): 1 on masked tokens whose entropy is at least the q-quantile of
// the masked entropies (torch.quantile, linear interpolation; ties at the
// threshold are kept), 0 elsewhere. entropy and mask are [B, C]; q is 1 −
// top_entropy_quantile. The result is a constant (no gradient).
//
// There is no sort on every backend, so the order statistics come from a
// bisection on counts: v_k is the smallest masked value above the largest
// bound that has at most k values at or below it. This is a graph building
// function and panics on error.
func HighEntropyMask(entropy, mask *graph.Node, q float64) *graph.Node {
	h := StopGradient(entropy)
	m := StopGradient(mask)
	inMask := GreaterThan(m, ZerosLike(m))
	n := ReduceAllSum(m)
	pos := MulScalar(MaxScalar(AddScalar(n, -1), 0), q) // q·(N−1)
	k := Floor(pos)
	frac := Sub(pos, k)
	vk := orderStatistic(h, inMask, k)
	// v_{k+1}: the same value when more than k+1 values tie at v_k, else
	// the next larger masked value (v_k itself when k is the last).
	atOrBelow := ReduceAllSum(ConvertDType(LogicalAnd(inMask, LessOrEqual(h, vk)), dtypes.Float32))
	big := constLike(h, 3e38)
	above := ReduceAllMin(Where(LogicalAnd(inMask, GreaterThan(h, vk)), h, BroadcastToShape(big, h.Shape())))
	next := Where(LogicalOr(GreaterOrEqual(atOrBelow, AddScalar(k, 2)), GreaterOrEqual(above, big)), vk, above)
	threshold := Add(vk, Mul(frac, Sub(next, vk)))
	keep := LogicalAnd(inMask, GreaterOrEqual(h, threshold))
	return StopGradient(ConvertDType(keep, dtypes.Float32))
}

// orderStatistic returns the k-th smallest (0-based, k a float scalar
// node) of the values of h where inMask is true; entropies are ≥ 0.
func orderStatistic(h, inMask, k *Node) *Node {
	big := constLike(h, 3e38)
	lo := constLike(h, -1)
	hi := ReduceAllMax(Where(inMask, h, ZerosLike(h)))
	need := AddScalar(k, 1)
	for range entropyBisections {
		mid := MulScalar(Add(lo, hi), 0.5)
		c := ReduceAllSum(ConvertDType(LogicalAnd(inMask, LessOrEqual(h, mid)), dtypes.Float32))
		enough := GreaterOrEqual(c, need)
		hi = Where(enough, mid, hi)
		lo = Where(enough, lo, mid)
	}
	return ReduceAllMin(Where(LogicalAnd(inMask, GreaterThan(h, lo)), h, BroadcastToShape(big, h.Shape())))
}
