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
// GRPOTrainer._generate_and_score_completions in float64: torch's nansum,
// nanmean, std (unbiased) and trl.trainer.utils.nanstd (unbiased:
// variance × count/(count−1), so NaN for a single value). It shares no
// code with RewardAdvantages.
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
	std := func(xs []float64) float64 { // torch.std: unbiased
		m := nanmean(xs)
		v := 0.0
		for _, x := range xs {
			v += (x - m) * (x - m)
		}
		return math.Sqrt(v / float64(len(xs)-1))
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
	adv := make([]float64, n)
	switch agg {
	case SumThenNormalize:
		rewards := make([]float64, n)
		for i := range rpf {
			rewards[i] = nansumRow(rpf[i])
		}
		batchStd := std(rewards)
		for i := range rewards {
			grp := rewards[i/g*g : i/g*g+g]
			s := std(grp)
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
		}
		m, s := nanmean(rewards), std(rewards)
		for i := range rewards {
			adv[i] = (rewards[i] - m) / (s + 1e-4)
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
	// (TRL warns; its rewards sum to 0); reward 2 applies to one row only
	// of group 0 (its nanstd is NaN there).
	patterns := map[string]map[int][]int{
		"none":            {},
		"one missing":     {4: {1}},
		"row without any": {1: {0, 1}, 5: {1}},
		"single in group": {0: {1}, 1: {1}, 3: {0}},
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
