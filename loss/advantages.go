package loss

import (
	"bytes"
	"encoding/json"
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
	// Rewards[i] is row i's aggregated reward R (the weighted sum of the
	// rewards, or of their group-normalized values for NormalizeThenSum);
	// NaN for a row no reward applied to.
	Rewards []float64
	// GroupMean[i] is the baseline subtracted from R (the mean of R over
	// row i's group, or over the batch for NormalizeThenSum); GroupStd[i] is
	// the unbiased standard deviation of the weighted reward sum over row
	// i's group. Both leave out the rows no reward applied to: the mean is
	// NaN when the group has none left, the σ when it has fewer than two.
	GroupMean, GroupStd []float64
	// Std[i] is the σ row i was divided by (TRL's std_rewards; for
	// ScaleNone the group σ, logged only); NaN as GroupStd.
	Std []float64
	// ZeroStd[k] says whether group k carries no learning signal: its
	// weighted rewards all tie (std ≈ 0), or fewer than two of its rows
	// were scored.
	ZeroStd []bool
}

// FracZeroStd returns the fraction of rows whose σ (Std) is close to 0, as
// TRL 1.16 logs frac_reward_zero_std; with group scaling that is the
// fraction of groups whose rewards all tie (a NaN σ, of a group with fewer
// than two scored rows, is not close to 0, as in torch.isclose).
func (a Advantages) FracZeroStd() float64 {
	if len(a.Std) == 0 {
		return 0
	}
	n := 0
	for _, s := range a.Std {
		if ZeroStd(s) {
			n++
		}
	}
	return float64(n) / float64(len(a.Std))
}

// FracGroupsZeroStd returns the fraction of groups whose weighted rewards
// all tie (ZeroStd), whatever the scaling: the groups that carry no
// learning signal. Unlike FracZeroStd it stays meaningful with ScaleBatch,
// where every row's σ is the batch's.
func (a Advantages) FracGroupsZeroStd() float64 {
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

// ZeroStd is torch.isclose(std, 0): |std| ≤ 1e-8.
func ZeroStd(s float64) bool { return math.Abs(s) <= 1e-8 }

// GroupAdvantages computes advantages for one reward laid out in groups of
// g consecutive rows (p0,p0,…,p1,p1,…, TRL's RepeatSampler order):
//
//	A_i = (r_i − mean_group(r)) / (std + AdvantageEps)
//
// where std is the unbiased (N−1) standard deviation of the row's group
// (ScaleGroup) or of the whole batch (ScaleBatch); ScaleNone leaves A_i =
// r_i − mean_group(r). It returns an error when g < 2 or len(rewards) is not
// a multiple of g.
func GroupAdvantages(rewards []float64, g int, scale ScaleRewards) (Advantages, error) {
	scores := make([][]float64, len(rewards))
	for i, r := range rewards {
		scores[i] = []float64{r}
	}
	return RewardAdvantages(scores, []float64{1}, g, scale, SumThenNormalize)
}

// RewardAdvantages computes TRL 1.16's advantages (unchanged since 1.10) from several rewards:
// scores[i][k] is reward k of row i, weights[k] its weight, rows in groups
// of g. SumThenNormalize sums the weighted rewards into R and applies
// GroupAdvantages' formula to R (the baseline is always the group mean;
// ScaleBatch divides by the std of all R). NormalizeThenSum (GDPO) first
// normalizes each reward within its group, (r − mean)/(std + 1e-4), sums
// them with the weights into R, then A = (R − mean(R))/(std(R) + 1e-4) over
// the batch; scale plays no role there. Every std is the unbiased one.
//
// A NaN score is a reward that did not apply to the row (TRL's None), and
// is left out as TRL leaves it out: SumThenNormalize sums the weighted
// rewards that applied (nansum); NormalizeThenSum normalizes each reward
// within its group over the rows it applied to (nanmean and the unbiased
// nanstd), and a reward that applied to fewer than two rows of a group
// (its nanstd is NaN) adds nothing to that group's rows. A row no reward
// applied to is unscorable: its R is NaN, it is left out of every mean and
// σ (the baseline, the group's and the batch's σ), and its advantage is 0.
// Where a σ has fewer than two rows to go on it is NaN, as TRL's nanstd,
// and the advantages it would divide are 0.
func RewardAdvantages(scores [][]float64, weights []float64, g int, scale ScaleRewards, agg Aggregation) (Advantages, error) {
	if g < 2 {
		return Advantages{}, fmt.Errorf("grpo: advantages: group size %d; it must be at least 2", g)
	}
	n := len(scores)
	if n%g != 0 {
		return Advantages{}, fmt.Errorf("grpo: advantages: %d rewards is not a multiple of the group size %d", n, g)
	}
	for i, row := range scores {
		if len(row) != len(weights) {
			return Advantages{}, fmt.Errorf("grpo: advantages: row %d has %d rewards for %d weights", i, len(row), len(weights))
		}
	}
	switch scale {
	case ScaleGroup, ScaleBatch, ScaleNone:
	default:
		return Advantages{}, fmt.Errorf("grpo: advantages: unknown ScaleRewards %q", scale)
	}
	a := Advantages{
		Values:    make([]float64, n),
		Rewards:   make([]float64, n),
		GroupMean: make([]float64, n),
		GroupStd:  make([]float64, n),
		Std:       make([]float64, n),
		ZeroStd:   make([]bool, n/g),
	}
	// Weighted sum of the raw rewards that applied; NaN for a row none
	// applied to.
	sum := make([]float64, n)
	for i, row := range scores {
		applied := false
		for k, r := range row {
			if !math.IsNaN(r) {
				sum[i] += weights[k] * r
				applied = true
			}
		}
		if !applied {
			sum[i] = math.NaN()
		}
	}
	for k := 0; k < n/g; k++ {
		_, std := NanMeanStd(sum[k*g : (k+1)*g])
		for i := k * g; i < (k+1)*g; i++ {
			a.GroupStd[i] = std
		}
		a.ZeroStd[k] = math.IsNaN(std) || ZeroStd(std)
	}
	switch agg {
	case SumThenNormalize:
		copy(a.Rewards, sum)
		var batchStd float64
		if scale == ScaleBatch {
			_, batchStd = NanMeanStd(sum)
		}
		for k := 0; k < n/g; k++ {
			mean, _ := NanMeanStd(sum[k*g : (k+1)*g])
			for i := k * g; i < (k+1)*g; i++ {
				a.GroupMean[i] = mean
				a.Std[i] = a.GroupStd[i]
				if scale == ScaleBatch {
					a.Std[i] = batchStd
				}
				a.Values[i] = sum[i] - mean
				if scale != ScaleNone {
					a.Values[i] /= a.Std[i] + AdvantageEps
				}
			}
		}
	case NormalizeThenSum:
		col := make([]float64, 0, g)
		for k := range weights {
			for grp := 0; grp < n/g; grp++ {
				col = col[:0]
				for j := range g {
					if r := scores[grp*g+j][k]; !math.IsNaN(r) {
						col = append(col, r)
					}
				}
				if len(col) < 2 {
					continue // nanstd is NaN: every normalized value is NaN, left out by the nansum
				}
				mean, std := MeanStd(col)
				for j := range g {
					if r := scores[grp*g+j][k]; !math.IsNaN(r) {
						a.Rewards[grp*g+j] += weights[k] * (r - mean) / (std + AdvantageEps)
					}
				}
			}
		}
		for i, s := range sum {
			if math.IsNaN(s) {
				a.Rewards[i] = math.NaN() // unscorable
			}
		}
		mean, std := NanMeanStd(a.Rewards)
		for i, r := range a.Rewards {
			a.GroupMean[i], a.Std[i] = mean, std
			a.Values[i] = (r - mean) / (std + AdvantageEps)
		}
	default:
		return Advantages{}, fmt.Errorf("grpo: advantages: unknown multi_objective_aggregation %q", agg)
	}
	for i, v := range a.Values {
		if math.IsNaN(v) {
			a.Values[i] = 0 // TRL's nan_to_num: unscorable rows, σ of fewer than two rows
		}
	}
	return a, nil
}

// NanMeanStd returns the mean and the N−1 standard deviation of the
// values of xs that are not NaN (torch.nanmean and TRL's nanstd): the mean
// is NaN when there are none, the σ when there are fewer than two.
func NanMeanStd(xs []float64) (mean, std float64) {
	var n, sum float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			n, sum = n+1, sum+x
		}
	}
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	mean = sum / n
	if n < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			ss += (x - mean) * (x - mean)
		}
	}
	return mean, math.Sqrt(ss / (n - 1))
}

// MeanStd returns the mean and the N−1 standard deviation of xs
// (std 0 for fewer than 2 values).
func MeanStd(xs []float64) (mean, std float64) {
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

// ScaleRewards names how centred rewards are divided to make advantages.
// In JSON it also accepts TRL's booleans: true is "group", false "none".
type ScaleRewards string

// The reward scalings: by the standard deviation of the group (TRL's
// scale_rewards=True, "group"), of the whole batch ("batch", PPO Lite) or
// not at all ("none", recommended by Dr. GRPO).
const (
	ScaleGroup ScaleRewards = "group"
	ScaleBatch ScaleRewards = "batch"
	ScaleNone  ScaleRewards = "none"
)

// UnmarshalJSON accepts "group", "batch", "none", true ("group") and false
// ("none"), as TRL's GRPOConfig does.
func (s *ScaleRewards) UnmarshalJSON(data []byte) error {
	switch string(bytes.TrimSpace(data)) {
	case "true":
		*s = ScaleGroup
		return nil
	case "false":
		*s = ScaleNone
		return nil
	}
	var v string
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("grpo: scale_rewards: want \"group\", \"batch\", \"none\", true or false, got %s", data)
	}
	*s = ScaleRewards(v)
	return nil
}

// Aggregation names how several reward functions combine into advantages
// (TRL's multi_objective_aggregation).
type Aggregation string

// The aggregations: weighted sum of the rewards, then ScaleRewards
// (default); or each reward normalized within its group first, then the
// weighted sum normalized over the batch (GDPO).
const (
	SumThenNormalize Aggregation = "sum_then_normalize"
	NormalizeThenSum Aggregation = "normalize_then_sum"
)
