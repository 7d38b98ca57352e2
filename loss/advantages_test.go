package loss

import (
	"math"
	"strings"
	"testing"
)

func TestGroupAdvantages(t *testing.T) {
	// Hand-computed: group {1, 0, 0.5} has mean 0.5 and unbiased std 0.5;
	// group {2, 2} has std 0; batch {1, 0, 0.5, 2, 2}... uses groups of 3 below.
	tests := []struct {
		name    string
		rewards []float64
		g       int
		scale   ScaleRewards
		want    []float64
		zero    []bool
	}{
		{"group", []float64{1, 0, 0.5}, 3, ScaleGroup,
			[]float64{0.5 / 0.5001, -0.5 / 0.5001, 0}, []bool{false}},
		{"none", []float64{1, 0, 0.5}, 3, ScaleNone,
			[]float64{0.5, -0.5, 0}, []bool{false}},
		{"tie", []float64{2, 2, 3, 5}, 2, ScaleGroup,
			// group 2: mean 4, std sqrt(2).
			[]float64{0, 0, -1 / (math.Sqrt2 + 1e-4), 1 / (math.Sqrt2 + 1e-4)}, []bool{true, false}},
		{"batch", []float64{0, 1, 1, 1}, 2, ScaleBatch,
			// batch mean 0.75, unbiased std sqrt(0.75/3) = 0.5.
			[]float64{-0.5 / 0.5001, 0.5 / 0.5001, 0, 0}, []bool{false, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := GroupAdvantages(tc.rewards, tc.g, tc.scale)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.want {
				if !closeTo(a.Values[i], tc.want[i], 1e-12, 0) {
					t.Errorf("A[%d] = %.12g, want %.12g", i, a.Values[i], tc.want[i])
				}
			}
			for k := range tc.zero {
				if a.ZeroStd[k] != tc.zero[k] {
					t.Errorf("ZeroStd[%d] = %v, want %v", k, a.ZeroStd[k], tc.zero[k])
				}
			}
		})
	}
}

func TestGroupAdvantagesErrors(t *testing.T) {
	tests := []struct {
		rewards []float64
		g       int
		want    string
	}{
		{[]float64{1, 2, 3}, 2, "grpo: advantages: 3 rewards is not a multiple of the group size 2"},
		{[]float64{1}, 1, "grpo: advantages: group size 1; it must be at least 2"},
	}
	for _, tc := range tests {
		_, err := GroupAdvantages(tc.rewards, tc.g, ScaleGroup)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("GroupAdvantages(%v, %d) error = %v, want %q", tc.rewards, tc.g, err, tc.want)
		}
	}
}

func TestGroupAdvantagesGolden(t *testing.T) {
	g, _ := loadGoldenGRPO(t, "llama-tiny")
	a, err := GroupAdvantages(g.Rewards, g.NumGenerations, ScaleGroup)
	if err != nil {
		t.Fatal(err)
	}
	for i := range g.Advantages {
		// README tolerance: advantages atol 1e-6.
		if !closeTo(a.Values[i], g.Advantages[i], 1e-6, 0) {
			t.Errorf("advantage[%d] = %.9g, golden %.9g", i, a.Values[i], g.Advantages[i])
		}
		if !closeTo(a.GroupMean[i], g.GroupMean[i], 1e-6, 0) || !closeTo(a.GroupStd[i], g.GroupStd[i], 1e-6, 0) {
			t.Errorf("row %d: mean/std %g/%g, golden %g/%g", i, a.GroupMean[i], a.GroupStd[i], g.GroupMean[i], g.GroupStd[i])
		}
	}
	if got := a.FracZeroStd(); got != 0 {
		t.Errorf("FracZeroStd = %g, want 0", got)
	}
}

// TestFracGroupsZeroStd: three groups of two, the middle one tied. With
// ScaleBatch every row's σ is the batch's (non-zero), so TRL's
// frac_reward_zero_std is 0 while one group in three carries no signal.
func TestFracGroupsZeroStd(t *testing.T) {
	rewards := []float64{0, 1, 2, 2, 1, 3}
	for _, tc := range []struct {
		scale              ScaleRewards
		wantRows, wantGrps float64
	}{
		{ScaleGroup, 2.0 / 6, 1.0 / 3},
		{ScaleBatch, 0, 1.0 / 3},
	} {
		a, err := GroupAdvantages(rewards, 2, tc.scale)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.FracZeroStd(); got != tc.wantRows {
			t.Errorf("%s: FracZeroStd = %g, want %g", tc.scale, got, tc.wantRows)
		}
		if got := a.FracGroupsZeroStd(); got != tc.wantGrps {
			t.Errorf("%s: FracGroupsZeroStd = %g, want %g", tc.scale, got, tc.wantGrps)
		}
	}
	if got := (Advantages{}).FracGroupsZeroStd(); got != 0 {
		t.Errorf("empty: FracGroupsZeroStd = %g, want 0", got)
	}
}
