package loss

import (
	"fmt"
	"math"
)

// TokenAdvantages returns the token-credit term w·(r − μ)/(σ + ε) of every
// token (see grpo.TokenCredit) for token rewards laid out in groups of g rows;
// rewards[i][t] is NaN where token t of row i is not scored, and gets 0.
// It also returns whether each group's scored rewards all tie (or number
// fewer than two). It fails when g < 2 or len(rewards) is not a multiple
// of g.
func TokenAdvantages(rewards [][]float64, weight float64, g int, scale ScaleRewards) (adv [][]float64, zeroStd []bool, err error) {
	if g < 2 {
		return nil, nil, fmt.Errorf("grpo: token advantages: group size %d; it must be at least 2", g)
	}
	if len(rewards)%g != 0 {
		return nil, nil, fmt.Errorf("grpo: token advantages: %d rows is not a multiple of the group size %d", len(rewards), g)
	}
	switch scale {
	case ScaleGroup, ScaleBatch, ScaleNone:
	default:
		return nil, nil, fmt.Errorf("grpo: token advantages: unknown ScaleRewards %q", scale)
	}
	var batchStd float64
	if scale == ScaleBatch {
		_, batchStd = MeanStd(ScoredRewards(rewards))
	}
	adv = make([][]float64, len(rewards))
	zeroStd = make([]bool, len(rewards)/g)
	for k := range zeroStd {
		group := rewards[k*g : (k+1)*g]
		xs := ScoredRewards(group)
		mean, std := MeanStd(xs)
		zeroStd[k] = len(xs) < 2 || ZeroStd(std)
		div := 1.0
		switch scale {
		case ScaleGroup:
			div = std + AdvantageEps
		case ScaleBatch:
			div = batchStd + AdvantageEps
		}
		for j, r := range group {
			a := make([]float64, len(r))
			for i, x := range r {
				if !math.IsNaN(x) && len(xs) >= 2 {
					a[i] = weight * (x - mean) / div
				}
			}
			adv[k*g+j] = a
		}
	}
	return adv, zeroStd, nil
}

// ScoredRewards returns the scored (non-NaN) token rewards of rows, in order.
func ScoredRewards(rows [][]float64) []float64 {
	var xs []float64
	for _, r := range rows {
		for _, x := range r {
			if !math.IsNaN(x) {
				xs = append(xs, x)
			}
		}
	}
	return xs
}
