package model

import (
	"fmt"
	"math"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// groupedBatch is two groups of three rows: group 0's prompt fills its 5
// columns, group 1's is left-padded by 2; completions of 1 to 4 tokens,
// right-padded to 4 columns (so the rows are 9 columns, as GRPO packs them).
func groupedBatch() (ids, mask [][]int32, promptLen int) {
	prompts := [][]int32{{11, 12, 13, 14, 15}, {21, 22, 23}}
	comps := [][]int32{{31, 32, 33, 34}, {41}, {51, 52}, {61, 62, 63}, {71, 72, 73, 74}, {81}}
	const P, C = 5, 4
	for r, c := range comps {
		p := prompts[r/3]
		row, m := make([]int32, P+C), make([]int32, P+C)
		copy(row[P-len(p):], p)
		copy(row[P:], c)
		for i := P - len(p); i < P+len(c); i++ {
			m[i] = 1
		}
		ids, mask = append(ids, row), append(mask, m)
	}
	return ids, mask, P
}

// groupedLossAndGrads runs the completion log-probs of the batch through the
// plain forward (group 0) or the grouped one, and returns the log-probs of
// the real completion tokens, their sum's gradients and the variables.
func groupedLossAndGrads(t *testing.T, m *Model, group int, checkpoint bool) ([]float32, []*tensors.Tensor) {
	t.Helper()
	ids, mask, P := groupedBatch()
	B, L := len(ids), len(ids[0])
	pos := make([][]int32, B)
	for b := range pos {
		pos[b] = make([]int32, L)
		for i := range pos[b] {
			pos[b][i] = int32(i)
		}
	}
	vars := m.TrainableVariables()
	e, err := mlctx.NewExec(m.Backend(), m.Context(), func(ctx *mlctx.Context, ids, mask, pos *Node) []*Node {
		var h *Node
		if group == 0 {
			h = m.HiddenRangeGraph(ctx, false, ids, mask, pos, P-1, L-1, checkpoint)
		} else {
			h = m.GroupedHiddenGraph(ctx, false, ids, mask, pos, P, group, checkpoint)
		}
		targets := Slice(ids, AxisRange(), AxisRange(P, L))
		lp, _ := TokenLogProbs(m.HeadGraph(ctx, h), targets, 1)
		real := ConvertDType(Slice(mask, AxisRange(), AxisRange(P, L)), lp.DType())
		lp = Mul(lp, real)
		var values []*Node
		for _, v := range vars {
			values = append(values, v.ValueGraph(ids.Graph()))
		}
		return append([]*Node{lp}, Gradient(ReduceAllSum(lp), values...)...)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Exec(tensors.FromValue(ids), tensors.FromValue(mask), tensors.FromValue(pos))
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](out[0]), out[1:]
}

// TestGroupedForwardMatchesPlain holds the grouped forward (each group's
// prompt once) to the plain one (every row whole, itself checked against
// transformers in golden_test.go): the completion log-probs and every
// weight's gradient, with and without gradient checkpointing, for a plain
// Llama, Qwen3's q/k norms and Gemma 3's sliding-window layers (window 4,
// shorter than the rows).
func TestGroupedForwardMatchesPlain(t *testing.T) {
	for _, name := range []string{"llama-tiny", "qwen3-tiny", "gemma3-tiny"} {
		for _, checkpoint := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/checkpoint=%v", name, checkpoint), func(t *testing.T) {
				m, err := Load(loadGolden(t, name).dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				lpPlain, gPlain := groupedLossAndGrads(t, m, 0, checkpoint)
				lpGroup, gGroup := groupedLossAndGrads(t, m, 3, checkpoint)
				// Relative to the log-prob's size past 1: the two layouts sum
				// in different orders (a shared prompt's products have other
				// shapes): with AVX2's kernels, log-probs near -20 differed
				// by 1.1e-5, a few ulps.
				var worst float64
				for i := range lpPlain {
					worst = max(worst, math.Abs(float64(lpPlain[i]-lpGroup[i]))/max(1, math.Abs(float64(lpPlain[i]))))
				}
				if worst > 1e-5 {
					t.Errorf("log-probs differ by %g (relative past 1)", worst)
				}
				var nonzero int
				for i, v := range m.TrainableVariables() {
					a, b := tensors.MustCopyFlatData[float32](gPlain[i]), tensors.MustCopyFlatData[float32](gGroup[i])
					var diff, norm float64
					for j := range a {
						diff = max(diff, math.Abs(float64(a[j]-b[j])))
						norm = max(norm, math.Abs(float64(a[j])))
					}
					if norm > 0 {
						nonzero++
					}
					if diff > 1e-5*max(1, norm) {
						t.Errorf("%s: gradients differ by %g (largest %g)", v.Name(), diff, norm)
					}
				}
				if nonzero < len(gPlain)/2 {
					t.Errorf("only %d of %d gradients are nonzero: the test would not see a difference", nonzero, len(gPlain))
				}
				t.Logf("log-probs within %g; %d gradients", worst, len(gPlain))
			})
		}
	}
}

// TestGroupedForwardSeesItsGroup checks the test's power: a group size that
// pairs rows of different prompts must change the log-probs.
func TestGroupedForwardSeesItsGroup(t *testing.T) {
	m, err := Load(loadGolden(t, "llama-tiny").dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	lpPlain, _ := groupedLossAndGrads(t, m, 0, false)
	lpWrong, _ := groupedLossAndGrads(t, m, 6, false) // one group: rows 3-5 get row 0's prompt
	var worst float64
	for i := range lpPlain {
		worst = max(worst, math.Abs(float64(lpPlain[i]-lpWrong[i])))
	}
	if worst < 1e-3 {
		t.Errorf("a wrong grouping changed the log-probs by only %g", worst)
	}
}

func TestGroupedHiddenGraphRefusesBadShapes(t *testing.T) {
	m, err := Load(loadGolden(t, "llama-tiny").dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids, mask, _ := groupedBatch()
	for _, tc := range []struct{ promptLen, group int }{{5, 4}, {0, 3}, {9, 3}} {
		e, err := mlctx.NewExec(m.Backend(), m.Context(), func(ctx *mlctx.Context, ids, mask *Node) *Node {
			return m.GroupedHiddenGraph(ctx, false, ids, mask, mask, tc.promptLen, tc.group, false)
		})
		if err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if r := recover(); !strings.Contains(fmt.Sprint(r), "GroupedHiddenGraph") {
					t.Errorf("prompt %d, group %d: got %v, want a panic naming GroupedHiddenGraph", tc.promptLen, tc.group, r)
				}
			}()
			_, _ = e.Exec(tensors.FromValue(ids), tensors.FromValue(mask))
		}()
	}
}
