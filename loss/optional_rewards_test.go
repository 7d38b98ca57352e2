package loss

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// trlAdvantages is TRL 1.10's advantage computation from rewards_per_func
// (NaN where a reward function returned None), transcribed from
// GRPOTrainer._generate_and_score_completions (TRL at f2cd577) in
// float64: torch's nansum and nanmean, trl.trainer.utils.nanstd (unbiased:
// variance × count/(count−1), so NaN for a single value), the unscorable
// rows (every reward None) set to NaN before the baselines, and
// nan_to_num on the advantages. It shares no code with RewardAdvantages.
func trlAdvantages(rpf [][]float64, w []float64, g int, scale ScaleRewards, agg Aggregation) []float64 {
	n, nk := len(rpf), len(w)
	nanmean := func(xs []float64) float64 {
		s, c := 0.0, 0.0
		for _, x := range xs {
			if !math.IsNaN(x) {
				s, c = s+x, c+1
			}
		}
		return s / c // NaN for c = 0, as torch
	}
	nanstd := func(xs []float64) float64 {
		m := nanmean(xs)
		v, c := 0.0, 0.0
		for _, x := range xs {
			if !math.IsNaN(x) {
				v, c = v+(x-m)*(x-m), c+1
			}
		}
		v /= c
		v *= c / (c - 1) // 0 × Inf = NaN for one value
		return math.Sqrt(v)
	}
	nansumRow := func(row []float64) float64 {
		s := 0.0
		for k, r := range row {
			if x := r * w[k]; !math.IsNaN(x) {
				s += x
			}
		}
		return s
	}
	// A row every reward function returned None for is unscorable: its
	// reward is NaN, out of every nanmean and nanstd, and its advantage is
	// 0 (nan_to_num at the end).
	unscorable := make([]bool, n)
	for i, row := range rpf {
		unscorable[i] = true
		for _, r := range row {
			if !math.IsNaN(r) {
				unscorable[i] = false
			}
		}
	}
	adv := make([]float64, n)
	switch agg {
	case SumThenNormalize:
		rewards := make([]float64, n)
		for i := range rpf {
			rewards[i] = nansumRow(rpf[i])
			if unscorable[i] {
				rewards[i] = math.NaN()
			}
		}
		batchStd := nanstd(rewards)
		for i := range rewards {
			grp := rewards[i/g*g : i/g*g+g]
			s := nanstd(grp) // scale group or none (num_generations > 1)
			if scale == ScaleBatch {
				s = batchStd
			}
			adv[i] = rewards[i] - nanmean(grp)
			if scale != ScaleNone {
				adv[i] /= s + 1e-4
			}
		}
	case NormalizeThenSum:
		norm := make([][]float64, n)
		for i := range norm {
			norm[i] = make([]float64, nk)
		}
		for grp := 0; grp < n/g; grp++ {
			for k := range nk {
				col := make([]float64, g)
				for j := range g {
					col[j] = rpf[grp*g+j][k]
				}
				m, s := nanmean(col), nanstd(col)
				for j := range g {
					norm[grp*g+j][k] = (col[j] - m) / (s + 1e-4)
				}
			}
		}
		rewards := make([]float64, n)
		for i := range norm {
			rewards[i] = nansumRow(norm[i])
			if unscorable[i] {
				rewards[i] = math.NaN()
			}
		}
		m, s := nanmean(rewards), nanstd(rewards)
		for i := range rewards {
			adv[i] = (rewards[i] - m) / (s + 1e-4)
		}
	}
	for i, x := range adv {
		if math.IsNaN(x) {
			adv[i] = 0
		}
	}
	return adv
}

// TestOptionalRewardsTRL: rewards that did not apply (NaN, TRL's None) on
// the TRL 1.10 golden's advantage sets. The reference transcription first
// reproduces the golden's advantages (no None), then the golden's reward
// columns with some entries made None are compared with it.
func TestOptionalRewardsTRL(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "shared", "golden", "trl-1.10", "golden.json"))
	if err != nil {
		t.Skipf("TRL 1.10 golden not found: %v", err)
	}
	var gold struct {
		Inputs struct {
			G        int       `json:"num_generations"`
			Rewards  []float64 `json:"rewards"`
			Rewards2 []float64 `json:"rewards2"`
		} `json:"inputs"`
		Sets map[string]struct {
			Params struct {
				Columns []string     `json:"reward_columns"`
				Weights []float64    `json:"reward_weights"`
				Scale   ScaleRewards `json:"scale_rewards"`
				Agg     Aggregation  `json:"multi_objective_aggregation"`
				G       int          `json:"num_generations"`
			} `json:"params"`
			Advantages []float64 `json:"advantages"`
		} `json:"advantage_sets"`
	}
	if err := json.Unmarshal(data, &gold); err != nil {
		t.Fatal(err)
	}
	nan := math.NaN()
	// Which entries are None: row → columns. Row 1 has no reward at all
	// (TRL warns; it is unscorable: out of the baseline, advantage 0);
	// reward 2 applies to one row only of group 0 (its nanstd is NaN
	// there); group 1 has a single scorable row, then none.
	patterns := map[string]map[int][]int{
		"none":             {},
		"one missing":      {4: {1}},
		"row without any":  {1: {0, 1}, 5: {1}},
		"single in group":  {0: {1}, 1: {1}, 3: {0}},
		"one scorable row": {3: {0, 1}, 4: {0, 1}},
		"group unscorable": {3: {0, 1}, 4: {0, 1}, 5: {0, 1}},
	}
	if len(gold.Sets) < 7 {
		t.Fatalf("%d advantage sets", len(gold.Sets))
	}
	for name, set := range gold.Sets {
		p := set.Params
		cols := map[string][]float64{"rewards": gold.Inputs.Rewards, "rewards2": gold.Inputs.Rewards2}
		for pname, pat := range patterns {
			n := len(gold.Inputs.Rewards)
			rpf := make([][]float64, n)
			for i := range rpf {
				for _, c := range p.Columns {
					rpf[i] = append(rpf[i], cols[c][i])
				}
				for _, k := range pat[i] {
					if k < len(rpf[i]) {
						rpf[i][k] = nan
					}
				}
			}
			ref := trlAdvantages(rpf, p.Weights, p.G, p.Scale, p.Agg)
			if pname == "none" {
				for i := range ref {
					if !closeTo(ref[i], set.Advantages[i], 1e-6, 0) {
						t.Fatalf("%s: the reference transcription gives %g at row %d, TRL's golden %g", name, ref[i], i, set.Advantages[i])
					}
				}
			}
			a, err := RewardAdvantages(rpf, p.Weights, p.G, p.Scale, p.Agg)
			if err != nil {
				t.Fatalf("%s, %s: %v", name, pname, err)
			}
			for i := range ref {
				if !closeTo(a.Values[i], ref[i], 1e-9, 1e-9) {
					t.Errorf("%s, %s: advantage[%d] = %.9g, TRL %.9g", name, pname, i, a.Values[i], ref[i])
				}
			}
		}
	}
}

// TestUnscorableRows: a row no reward applied to has advantage 0 and is
// out of its group's baseline and σ; a group with fewer than two scored
// rows has a NaN σ, which frac_reward_zero_std does not count as zero (as
// torch.isclose) but ZeroStd marks as carrying no signal.
func TestUnscorableRows(t *testing.T) {
	nan := math.NaN()
	scores := [][]float64{{1}, {3}, {nan}, {2}, {nan}, {nan}}
	a, err := RewardAdvantages(scores, []float64{1}, 3, ScaleGroup, SumThenNormalize)
	if err != nil {
		t.Fatal(err)
	}
	s := math.Sqrt2 // σ of {1, 3}
	want := []float64{-1 / (s + AdvantageEps), 1 / (s + AdvantageEps), 0, 0, 0, 0}
	for i := range want {
		if !closeTo(a.Values[i], want[i], 1e-12, 1e-12) {
			t.Errorf("advantage[%d] = %g, want %g", i, a.Values[i], want[i])
		}
	}
	if a.GroupMean[0] != 2 || !closeTo(a.GroupStd[2], s, 1e-12, 0) || !math.IsNaN(a.Std[3]) || !math.IsNaN(a.Rewards[2]) {
		t.Errorf("group means %v, stds %v, R %v", a.GroupMean, a.Std, a.Rewards)
	}
	if a.ZeroStd[0] || !a.ZeroStd[1] || a.FracZeroStd() != 0 || a.FracGroupsZeroStd() != 0.5 {
		t.Errorf("ZeroStd %v, FracZeroStd %g, FracGroupsZeroStd %g", a.ZeroStd, a.FracZeroStd(), a.FracGroupsZeroStd())
	}
}
