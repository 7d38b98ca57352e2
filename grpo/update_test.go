package grpo

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
)

// updateCase is a small AdamW problem: two trainable variables (a matrix
// and a vector), a frozen one, and the gradients of three steps.
type updateCase struct {
	cfg   Config
	w0    [][]float32 // initial values, by variable
	grads func(step, v int) []float32
}

func newUpdateCase() updateCase {
	cfg := DefaultConfig()
	cfg.LearningRate = 0.01
	cfg.WeightDecay = 0.1
	cfg.AdamBeta1, cfg.AdamBeta2, cfg.AdamEpsilon = 0.9, 0.999, 1e-8
	w0 := [][]float32{make([]float32, 12), make([]float32, 5)}
	for v, w := range w0 {
		for i := range w {
			w[i] = float32(math.Sin(float64(7*i+3*v+1))) * 0.02 // the size of a step: its rounding shows
		}
	}
	// Gradients of mixed scales and signs, a zero among them.
	grads := func(step, v int) []float32 {
		g := make([]float32, len(w0[v]))
		for i := range g {
			g[i] = float32(math.Cos(float64(5*i+11*step+2*v))) * float32(math.Pow(10, float64(i%4-2)))
		}
		g[0] = 0
		return g
	}
	return updateCase{cfg: cfg, w0: w0, grads: grads}
}

// context returns a context holding the case's variables: "a/w" [3, 4],
// "b/w" [5] (trainable; the update takes the smaller first) and
// "frozen/w" (not).
func (c updateCase) context() (*mlctx.Context, []*mlctx.Variable) {
	ctx := mlctx.New()
	a := ctx.In("a").VariableWithValue("w", tensors.FromFlatDataAndDimensions(append([]float32(nil), c.w0[0]...), 3, 4))
	b := ctx.In("b").VariableWithValue("w", append([]float32(nil), c.w0[1]...))
	ctx.In("frozen").VariableWithValue("w", []float32{1, 2}).SetTrainable(false)
	return ctx, []*mlctx.Variable{a, b}
}

func (c updateCase) gradTensors(step int, vars []*mlctx.Variable) []*tensors.Tensor {
	out := make([]*tensors.Tensor, len(vars))
	for v, x := range vars {
		out[v] = tensors.FromFlatDataAndDimensions(c.grads(step, v), x.Shape().Dimensions...)
	}
	return out
}

// moments returns the AdamW moments of v in ctx.
func moments(t *testing.T, ctx *mlctx.Context, v *mlctx.Variable) (m1, m2 *mlctx.Variable) {
	t.Helper()
	scope := mlctx.ScopeSeparator + grpoOptimizerScope + v.Scope()
	m1 = ctx.GetVariableByScopeAndName(scope, v.Name()+"_1st_moment")
	m2 = ctx.GetVariableByScopeAndName(scope, v.Name()+"_2nd_moment")
	if m1 == nil || m2 == nil {
		t.Fatalf("no AdamW moments for %s under %s", v.ScopeAndName(), scope)
	}
	return m1, m2
}

func values(t *testing.T, v *mlctx.Variable) []float32 {
	t.Helper()
	x, err := v.Value()
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](x)
}

// fusedUpdate is the step as the trainer took it before the update became
// its own executable: GoMLX's Adam and, for every changed variable,
// Where(finite, new, old), all in one graph that takes the gradients as
// (not donated) inputs. It is the reference the in-place update must
// match bit for bit.
func fusedUpdate(b backends.Backend, ctx *mlctx.Context, opt gradientOptimizer, vars []*mlctx.Variable) *mlctx.Exec {
	return mlctx.MustNewExec(b, ctx, func(ctx *mlctx.Context, grads []*graph.Node) *graph.Node {
		ctx = ctx.Checked(false)
		g := grads[0].Graph()
		for _, v := range vars {
			v.ValueGraph(g)
		}
		ok := graph.Const(g, true)
		opt.UpdateGraphWithGradients(ctx, grads, dtypes.Float32)
		for v := range ctx.IterVariables() {
			if !v.ChangedInGraph(g) {
				continue
			}
			old := g.GetParameterByName(v.ParameterName())
			updated := v.ValueGraph(g)
			v.SetValueGraph(graph.Where(graph.BroadcastToShape(ok, updated.Shape()), updated, old))
		}
		return graph.ScalarZero(g, dtypes.Float32)
	})
}

// TestAdamUpdateMatchesReference: three AdamW steps of the in-place
// update (gradients donated, weights and moments overwritten), as adamw
// loops over the buffers (update_fast.go) and as the update graph, against a
// float64 evaluation of torch.optim.AdamW's formulas (decoupled weight
// decay lr·λ·w, bias corrections 1−β^t, ε added to √v̂; relative
// tolerance 1e-6 for the moments, 2e-6 for the weights, float32 rounding),
// and bit for bit against the fused graph the trainer used before.
func TestAdamUpdateMatchesReference(t *testing.T) {
	for _, loops := range []bool{true, false} {
		for _, wd := range []float64{0.1, 0} {
			t.Run(fmt.Sprintf("loops %v weight decay %g", loops, wd), func(t *testing.T) {
				defer func(old bool) { adamLoops = old }(adamLoops)
				adamLoops = loops
				c := newUpdateCase()
				c.cfg.WeightDecay = wd
				testAdamUpdate(t, c, loops)
			})
		}
	}
}

func testAdamUpdate(t *testing.T, c updateCase, loops bool) {
	b := backend.Must("")
	ctx, vars := c.context()
	u, err := newAdamUpdate(b, ctx, c.cfg, grpoOptimizerScope)
	if err != nil {
		t.Fatal(err)
	}
	u.setVars(vars)

	fctx, fvars := c.context()
	fopt, err := newOptimizer(c.cfg, grpoOptimizerScope)
	if err != nil {
		t.Fatal(err)
	}
	fused := fusedUpdate(b, fctx, fopt, fvars)

	// The float64 reference.
	// The betas as the float32 constants the graph holds: 1−β₂ of
	// float32(0.999) is 1.3e-5 away from 0.001 (torch rounds 0.001
	// instead), beyond the tolerance.
	f32 := func(x float64) float64 { return float64(float32(x)) }
	b1, b2, eps, lr, wd := f32(c.cfg.AdamBeta1), f32(c.cfg.AdamBeta2), c.cfg.AdamEpsilon, c.cfg.LearningRate, c.cfg.WeightDecay
	w, m, v := make([][]float64, len(vars)), make([][]float64, len(vars)), make([][]float64, len(vars))
	for i := range vars {
		for _, x := range c.w0[i] {
			w[i] = append(w[i], float64(x))
		}
		m[i], v[i] = make([]float64, len(w[i])), make([]float64, len(w[i]))
	}

	for step := 1; step <= 3; step++ {
		if err := u.apply(c.gradTensors(step, vars)); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if ran := u.scalars != nil; ran != loops {
			t.Fatalf("step %d: the update ran as loops: %v, want %v", step, ran, loops)
		}
		args := make([]any, len(fvars))
		for i, g := range c.gradTensors(step, fvars) {
			args[i] = g
		}
		if _, err := fused.Exec(args...); err != nil {
			t.Fatalf("fused step %d: %v", step, err)
		}
		bc1, bc2 := 1-math.Pow(b1, float64(step)), 1-math.Pow(b2, float64(step))
		for i, x := range vars {
			g := c.grads(step, i)
			for j := range w[i] {
				gj := float64(g[j])
				m[i][j] = b1*m[i][j] + (1-b1)*gj
				v[i][j] = b2*v[i][j] + (1-b2)*gj*gj
				w[i][j] -= lr * ((m[i][j]/bc1)/(math.Sqrt(v[i][j]/bc2)+eps) + wd*w[i][j])
			}
			m1, m2 := moments(t, ctx, x)
			fm1, fm2 := moments(t, fctx, fvars[i])
			for _, k := range []struct {
				name       string
				got, fused *mlctx.Variable
				want       []float64
				tol        float64
			}{
				{"weights", x, fvars[i], w[i], 2e-6},
				{"1st moment", m1, fm1, m[i], 1e-6},
				{"2nd moment", m2, fm2, v[i], 1e-6},
			} {
				got, fgot := values(t, k.got), values(t, k.fused)
				for j, want := range k.want {
					if d := math.Abs(float64(got[j]) - want); d > k.tol*max(1, math.Abs(want)) {
						t.Errorf("step %d %s %s[%d] = %.9g, float64 reference %.9g (|diff| %.3g)", step, x.ScopeAndName(), k.name, j, got[j], want, d)
					}
					if math.Float32bits(got[j]) != math.Float32bits(fgot[j]) {
						t.Errorf("step %d %s %s[%d] = %.9g in place, %.9g fused: not bit-identical", step, x.ScopeAndName(), k.name, j, got[j], fgot[j])
					}
				}
			}
		}
	}
	if got := values(t, ctx.GetVariableByScopeAndName("/frozen", "w")); got[0] != 1 || got[1] != 2 {
		t.Errorf("frozen variable changed: %v", got)
	}
}

// onDevice returns x as the trainer's gradients are: a tensor held by the
// backend only (the output of a graph), so donating it consumes it.
func onDevice(t *testing.T, b backends.Backend, x *tensors.Tensor) *tensors.Tensor {
	t.Helper()
	if err := x.MaterializeOnDevice(b, false, 0); err != nil {
		t.Fatal(err)
	}
	x.FinalizeLocal()
	return x
}

// TestAdamUpdateInPlace: the update does not allocate a second set of
// weights and moments: with the backend's buffer pools emptied, a step of
// eight 1 MiB variables allocates less than one set of weights (8 MiB;
// only a few temporaries of one variable's size), and it consumes the
// donated gradients. The fused graph the trainer used before (control)
// allocates new weights and moments beside the old ones: at least three
// sets.
func TestAdamUpdateInPlace(t *testing.T) {
	defer func(old bool) { adamLoops = old }(adamLoops)
	b := backend.Must("")
	const numVars, size = 8, 1 << 18 // float32: 1 MiB a variable
	const set = numVars * size * 4
	cfg := newUpdateCase().cfg
	grads := func(step int, vars []*mlctx.Variable) []*tensors.Tensor {
		out := make([]*tensors.Tensor, len(vars))
		for i := range vars {
			g := make([]float32, size)
			for j := range g {
				g[j] = float32(math.Sin(float64(j*(i+1)+step))) * 1e-2
			}
			out[i] = onDevice(t, b, tensors.FromFlatDataAndDimensions(g, size))
		}
		return out
	}
	for _, mode := range []string{"loops", "graph", "fused"} {
		inPlace := mode != "fused"
		adamLoops = mode == "loops"
		ctx := mlctx.New()
		var vars []*mlctx.Variable
		for i := range numVars {
			w := make([]float32, size)
			for j := range w {
				w[j] = float32(math.Cos(float64(j + i)))
			}
			vars = append(vars, ctx.In(fmt.Sprintf("layer%d", i)).VariableWithValue("w", w))
		}
		var step func([]*tensors.Tensor) error
		if inPlace {
			u, err := newAdamUpdate(b, ctx, cfg, grpoOptimizerScope)
			if err != nil {
				t.Fatal(err)
			}
			u.setVars(vars)
			step = func(gs []*tensors.Tensor) error {
				if err := u.apply(gs); err != nil {
					return err
				}
				for i, g := range gs {
					if g.Ok() {
						t.Errorf("gradient %d still held after the update: it was not donated", i)
					}
				}
				return nil
			}
		} else {
			opt, err := newOptimizer(cfg, grpoOptimizerScope)
			if err != nil {
				t.Fatal(err)
			}
			fused := fusedUpdate(b, ctx, opt, vars)
			step = func(gs []*tensors.Tensor) error {
				var args []any
				for _, g := range gs {
					args = append(args, g)
				}
				_, err := fused.Exec(args...)
				return err
			}
		}
		// The first step compiles the graph, moves the initial values onto
		// the backend and creates the moments.
		if err := step(grads(1, vars)); err != nil {
			t.Fatal(err)
		}
		gs := grads(2, vars) // made before counting
		runtime.GC()
		runtime.GC() // sync.Pool keeps its items for one collection
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := step(gs); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		alloc := int64(after.TotalAlloc - before.TotalAlloc)
		t.Logf("%s: a step allocated %.1f MiB (a set of weights is %d MiB)", mode, float64(alloc)/(1<<20), set>>20)
		if inPlace && alloc >= set {
			t.Errorf("in place: a step allocated %d bytes, a set of weights is %d: the update allocates new weights or moments", alloc, set)
		}
		if !inPlace && alloc < 3*set {
			t.Errorf("fused (control): a step allocated %d bytes, less than three sets of weights (%d): the check cannot tell the two updates apart", alloc, 3*set)
		}
	}
}

// TestClipOnHostMatchesGraph: with the update as loops, the training
// graph returns the gradients unclipped and the host computes the norm,
// the finite check and the clipping inside the AdamW pass; the weights and
// grad_norm after two steps are the same bits as with the whole clipping
// in the graph (and the update graph), with clipping active, off, and over
// accumulated micro-batches.
func TestClipOnHostMatchesGraph(t *testing.T) {
	cfgModel, tok := tinyLM(t)
	data := dataset.SliceDataset{{Prompt: "say cat", Answer: "cat"}, {Prompt: "say dog", Answer: "dog"}}
	// Rewards that differ within a group, so the loss has a gradient.
	length := reward.Named{Name: "length", Weight: 1, Scorer: reward.Func(func(_, c, _ string) float64 { return float64(len(c) % 5) })}
	run := func(t *testing.T, loops bool, maxNorm float64, accum int) (map[string][]float32, []float64) {
		defer func(old bool) { adamLoops = old }(adamLoops)
		adamLoops = loops
		m, err := model.New(cfgModel, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewLMPolicy(m, nil, tok, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.NumGenerations, cfg.MaxCompletionLength, cfg.MaxPromptLength = 4, 4, 8
		cfg.BatchSize, cfg.GradientAccumulationSteps = 8/accum, accum
		cfg.LearningRate, cfg.MaxGradNorm, cfg.MaxSteps = 0.01, maxNorm, 2
		cfg.LoggingSteps, cfg.OutputDir, cfg.ShuffleDataset = 0, t.TempDir(), false
		tr, err := NewTrainer(p, cfg, length)
		if err != nil {
			t.Fatal(err)
		}
		var norms []float64
		tr.OnStep = func(m Metrics) { norms = append(norms, m["grad_norm"]) }
		if err := tr.Train(t.Context(), data); err != nil {
			t.Fatal(err)
		}
		if tr.update.clipOnHost != loops {
			t.Fatalf("clipOnHost = %v with loops %v", tr.update.clipOnHost, loops)
		}
		w := map[string][]float32{}
		for v := range m.Context().IterVariables() {
			if v.Trainable {
				w[v.ScopeAndName()] = values(t, v)
			}
		}
		return w, norms
	}
	for _, c := range []struct {
		maxNorm float64
		accum   int
	}{{1e-3, 1}, {0, 1}, {1e-3, 2}} {
		t.Run(fmt.Sprintf("max_grad_norm %g accumulation %d", c.maxNorm, c.accum), func(t *testing.T) {
			host, hostNorms := run(t, true, c.maxNorm, c.accum)
			graphW, graphNorms := run(t, false, c.maxNorm, c.accum)
			if len(hostNorms) != 2 || hostNorms[0] == 0 || !slices.Equal(hostNorms, graphNorms) {
				t.Errorf("grad_norm on the host %v, in the graph %v", hostNorms, graphNorms)
			}
			if c.maxNorm > 0 && hostNorms[0] <= c.maxNorm {
				t.Errorf("grad_norm %g ≤ max_grad_norm %g: clipping not exercised", hostNorms[0], c.maxNorm)
			}
			for name, want := range graphW {
				got := host[name]
				for j := range want {
					if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
						t.Fatalf("%s[%d] = %.9g clipped on the host, %.9g in the graph", name, j, got[j], want[j])
					}
				}
			}
		})
	}
}
