package optim

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/grpokit/grpokit/internal/backend"
)

// TestNewAdamWOneStep: one step of the optimizer on a small vector
// against torch.optim.AdamW's formulas in float64 (bias corrections 1−β^t,
// ε added to √v̂, decoupled weight decay lr·λ·w), with the moments kept
// under the scope asked for.
func TestNewAdamWOneStep(t *testing.T) {
	const scope = "TestAdamScope"
	c := AdamWConfig{LearningRate: 0.01, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8, WeightDecay: 0.1}
	opt, err := NewAdamW(scope, c)
	if err != nil {
		t.Fatal(err)
	}
	w0 := []float32{0.5, -0.25, 0.125, 0}
	grad := []float32{0.3, -2, 0, 1e-3}
	ctx := mlctx.New()
	w := ctx.In("p").VariableWithValue("w", append([]float32(nil), w0...))
	exec := mlctx.MustNewExec(backend.Must(""), ctx, func(ctx *mlctx.Context, g *graph.Node) *graph.Node {
		w.ValueGraph(g.Graph())
		opt.UpdateGraphWithGradients(ctx.Checked(false), []*graph.Node{g}, dtypes.Float32)
		return graph.ScalarZero(g.Graph(), dtypes.Float32)
	})
	if _, err := exec.Exec(grad); err != nil {
		t.Fatal(err)
	}
	x, err := w.Value()
	if err != nil {
		t.Fatal(err)
	}
	got := x.Value().([]float32)
	f32 := func(v float64) float64 { return float64(float32(v)) } // the betas as the graph holds them
	b1, b2 := f32(c.Beta1), f32(c.Beta2)
	for i, g := range grad {
		m := (1 - b1) * float64(g) / (1 - b1)
		v := (1 - b2) * float64(g) * float64(g) / (1 - b2)
		want := float64(w0[i]) - c.LearningRate*(m/(math.Sqrt(v)+c.Epsilon)+c.WeightDecay*float64(w0[i]))
		if d := math.Abs(float64(got[i]) - want); d > 2e-6*math.Max(math.Abs(want), 1e-3) {
			t.Errorf("w[%d] = %.9g, want %.9g (AdamW)", i, got[i], want)
		}
	}
	s := mlctx.ScopeSeparator + scope + w.Scope()
	if ctx.GetVariableByScopeAndName(s, "w_1st_moment") == nil || ctx.GetVariableByScopeAndName(s, "w_2nd_moment") == nil {
		t.Errorf("no AdamW moments under %s", s)
	}
}
