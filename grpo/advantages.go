package grpo

import (
	"fmt"
	"math"
)

// AdvantageEps is added to the standard deviation before dividing, as in
// TRL v0.21.0.
const AdvantageEps = 1e-4

// Advantages holds group-relative advantages and the statistics TRL logs
// with them.
type Advantages struct {
	// Values[i] is row i's advantage.
	Values []float64
	// GroupMean[i] and GroupStd[i] are the mean and unbiased standard
	// deviation of row i's group.
	GroupMean, GroupStd []float64
	// ZeroStd[k] says whether group k's rewards all tie (std ≈ 0).
	ZeroStd []bool
}

// FracZeroStd returns the fraction of groups whose rewards all tie (TRL's
// frac_reward_zero_std).
func (a Advantages) FracZeroStd() float64 {
	if len(a.ZeroStd) == 0 {
		return 0
	}
	n := 0
	for _, z := range a.ZeroStd {
		if z {
			n++
		}
	}
	return float64(n) / float64(len(a.ZeroStd))
}

// GroupAdvantages computes advantages for rewards laid out in groups of g
// consecutive rows (p0,p0,…,p1,p1,…, TRL's RepeatSampler order):
//
//	A_i = (r_i − mean_group(r)) / (std + AdvantageEps)
//
// where std is the unbiased (N−1) standard deviation of the row's group
// (ScaleGroup) or of the whole batch (ScaleBatch); ScaleNone leaves A_i =
// r_i − mean_group(r). It returns an error when g < 2 or len(rewards) is not
// a multiple of g.
func GroupAdvantages(rewards []float64, g int, scale ScaleRewards) (Advantages, error) {
	if g < 2 {
		return Advantages{}, fmt.Errorf("grpo: advantages: group size %d; it must be at least 2", g)
	}
	if len(rewards)%g != 0 {
		return Advantages{}, fmt.Errorf("grpo: advantages: %d rewards is not a multiple of the group size %d", len(rewards), g)
	}
	n := len(rewards)
	a := Advantages{
		Values:    make([]float64, n),
		GroupMean: make([]float64, n),
		GroupStd:  make([]float64, n),
		ZeroStd:   make([]bool, n/g),
	}
	for k := 0; k < n/g; k++ {
		mean, std := meanStdUnbiased(rewards[k*g : (k+1)*g])
		for i := k * g; i < (k+1)*g; i++ {
			a.GroupMean[i], a.GroupStd[i] = mean, std
		}
		// torch.isclose(std, 0): |std| ≤ 1e-8.
		a.ZeroStd[k] = std <= 1e-8
	}
	var batchStd float64
	if scale == ScaleBatch {
		_, batchStd = meanStdUnbiased(rewards)
	}
	for i, r := range rewards {
		v := r - a.GroupMean[i]
		switch scale {
		case ScaleGroup:
			v /= a.GroupStd[i] + AdvantageEps
		case ScaleBatch:
			v /= batchStd + AdvantageEps
		case ScaleNone:
		default:
			return Advantages{}, fmt.Errorf("grpo: advantages: unknown ScaleRewards %q", scale)
		}
		a.Values[i] = v
	}
	return a, nil
}

// meanStdUnbiased returns the mean and the N−1 standard deviation of xs
// (std 0 for fewer than 2 values).
func meanStdUnbiased(xs []float64) (mean, std float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		d := x - mean
		ss += d * d
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}
