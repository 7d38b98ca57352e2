package loss

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/grpokit/grpokit/internal/backend"
)

// TestTokenAdvantages checks the token credit's term against numbers
// worked out by hand (Python's statistics.stdev for the unbiased σ):
// group 1's scored rewards {1, 0, 1, 1} have μ 0.75, σ 0.5; group 2's
// {2, 2, 2, 3} μ 2.25, σ 0.5; all eight σ 0.9258200997725514.
func TestTokenAdvantages(t *testing.T) {
	nan := math.NaN()
	rewards := [][]float64{{1, nan, 0}, {1, 1}, {2, nan, 2}, {2, 3}}
	const a, b = 0.9998000399920016, 2.9994001199760048 // 2·0.25/(0.5+ε), 2·0.75/(0.5+ε)
	const c, d = 0.5400033978340281, 1.620010193502084  // 2·0.25/(σ_batch+ε), 2·0.75/(σ_batch+ε)
	for _, tc := range []struct {
		name    string
		rewards [][]float64
		scale   ScaleRewards
		want    [][]float64
		zero    []bool
	}{
		{"group", rewards, ScaleGroup, [][]float64{{a, 0, -b}, {a, a}, {-a, 0, -a}, {-a, b}}, []bool{false, false}},
		{"batch", rewards, ScaleBatch, [][]float64{{c, 0, -d}, {c, c}, {-c, 0, -c}, {-c, d}}, []bool{false, false}},
		{"none", rewards, ScaleNone, [][]float64{{0.5, 0, -1.5}, {0.5, 0.5}, {-0.5, 0, -0.5}, {-0.5, 1.5}}, []bool{false, false}},
		{"ties and lone tokens", [][]float64{{3, 3}, {3}, {nan}, {4}, {nan}, {nan}}, ScaleGroup,
			[][]float64{{0, 0}, {0}, {0}, {0}, {0}, {0}}, []bool{true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, zero, err := TokenAdvantages(tc.rewards, 2, 2, tc.scale)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.want {
				if len(got[i]) != len(tc.want[i]) {
					t.Fatalf("row %d: %v, want %v", i, got[i], tc.want[i])
				}
				for j := range tc.want[i] {
					if math.Abs(got[i][j]-tc.want[i][j]) > 1e-12 {
						t.Errorf("row %d token %d: %.16g, want %.16g", i, j, got[i][j], tc.want[i][j])
					}
				}
			}
			for k := range tc.zero {
				if zero[k] != tc.zero[k] {
					t.Errorf("group %d zero std %v, want %v", k, zero[k], tc.zero[k])
				}
			}
		})
	}
	for _, tc := range []struct {
		g     int
		n     int
		scale ScaleRewards
		want  string
	}{{1, 2, ScaleGroup, "group size 1"}, {2, 3, ScaleGroup, "not a multiple"}, {2, 2, "rows", "unknown ScaleRewards"}} {
		if _, _, err := TokenAdvantages(make([][]float64, tc.n), 1, tc.g, tc.scale); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("g %d, %d rows, %q: err = %v, want %q", tc.g, tc.n, tc.scale, err, tc.want)
		}
	}
}

// TestTokenLossPerTokenAdvantages checks TokenLoss with [B, C] advantages:
// on-policy (ratio 1) and without KL, the clipped policy term is −A_{b,t}
// token by token; and for every loss type, advantages equal along each row
// give the [B] path's per-token loss bit for bit.
func TestTokenLossPerTokenAdvantages(t *testing.T) {
	b := backend.Must("")
	const rows, cols = 2, 3
	logp := []float32{-0.5, -1.2, -2, -0.1, -0.7, -3}
	old := []float32{-0.6, -1, -2.3, -0.1, -0.9, -2.5}
	mask := []float32{1, 1, 1, 1, 1, 0}
	tokenAdv := []float32{0.5, -1.5, 2, -0.25, 0, 1}
	onPolicy, err := graph.NewExec(b, func(logp, adv *graph.Node) *graph.Node {
		return TokenLoss(Inputs{LogP: logp, Adv: adv}, Spec{Type: GRPO, Epsilon: 0.2, EpsilonHigh: 0.2}).PerToken
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := onPolicy.Exec(tensors.FromFlatDataAndDimensions(logp, rows, cols), tensors.FromFlatDataAndDimensions(tokenAdv, rows, cols))
	if err != nil {
		t.Fatal(err)
	}
	got := tensors.MustCopyFlatData[float32](out[0])
	for i, a := range tokenAdv {
		if got[i] != -a {
			t.Errorf("on-policy per-token loss [%d] = %g, want %g", i, got[i], -a)
		}
	}

	rowAdv := []float32{0.7, -1.3}
	flat := make([]float32, rows*cols)
	for i := range flat {
		flat[i] = rowAdv[i/cols]
	}
	thr := 0.05
	for _, spec := range []Spec{
		{Type: GRPO, Epsilon: 0.1, EpsilonHigh: 0.1},
		{Type: DAPO, Epsilon: 0.1, EpsilonHigh: 0.3, Delta: 1.1},
		{Type: GRPO, Level: LevelSequence, Epsilon: 0.1, EpsilonHigh: 0.1},
		{Type: CISPO, EpsilonHigh: 1.05},
		{Type: SAPO, SAPOTemperaturePos: 1, SAPOTemperatureNeg: 1.05},
		{Type: VESPO, VESPO: VESPOParams{KPos: 2, LambdaPos: 3, KNeg: 3, LambdaNeg: 2}},
		{Type: GRPO, Epsilon: 0.1, EpsilonHigh: 0.1, OffPolicyMaskThreshold: &thr},
	} {
		name := string(spec.Type) + "/" + string(spec.Level)
		exec, err := graph.NewExec(b, func(logp, old, mask, adv *graph.Node) *graph.Node {
			return TokenLoss(Inputs{LogP: logp, Old: old, Mask: mask, Adv: adv}, spec).PerToken
		})
		if err != nil {
			t.Fatal(err)
		}
		run := func(adv *tensors.Tensor) []float32 {
			out, err := exec.Exec(tensors.FromFlatDataAndDimensions(logp, rows, cols), tensors.FromFlatDataAndDimensions(old, rows, cols),
				tensors.FromFlatDataAndDimensions(mask, rows, cols), adv)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return tensors.MustCopyFlatData[float32](out[0])
		}
		seq := run(tensors.FromFlatDataAndDimensions(rowAdv, rows))
		tok := run(tensors.FromFlatDataAndDimensions(flat, rows, cols))
		for i := range seq {
			if seq[i] != tok[i] {
				t.Errorf("%s: token %d: [B, C] path %g, [B] path %g", name, i, tok[i], seq[i])
			}
		}
	}
}
