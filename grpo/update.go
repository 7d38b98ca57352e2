package grpo

// The AdamW step runs as its own executable, after the training graph,
// on buffers it may overwrite.
//
// Why: in one fused graph (gradients, clipping, AdamW, and the non-finite
// guard's Where(finite, new, old) for every variable) the old weights and
// moments stay alive until every variable's new weights and moments exist,
// so the step held two sets of them: 12 bytes per trainable parameter
// beside the 16 of weights, gradients and moments (1.6 GB for
// SmolLM2-135M). Here the training graph returns the clipped gradients and
// the finite flag; when the flag is set, the trainer hands the gradients
// to the update executable (adamUpdate) as donated buffers, and context.Exec donates
// the weights, moments and step counters it changes. SimpleGo's
// element-wise ops write into an owned operand at its last use, so each
// variable's new moments and weights take the place of the old ones (in
// the old buffer or a temporary's, the other freed at once) and its
// gradient is freed once applied: the update needs only two temporaries
// of one variable's size, never a second set (TestAdamUpdateInPlace). The arithmetic is GoMLX's Adam, op for op, so
// the results are the fused graph's bit for bit.

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/context/initializers"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
)

// adamUpdate is the AdamW step's executable and the variables it trains.
type adamUpdate struct {
	backend backends.Backend
	cfg     Config
	scope   string // of the optimizer state (see grpoOptimizerScope)
	exec    *mlctx.Exec
	ctx     *mlctx.Context
	// scalars is the step-scalars executable of applyLoops (update_fast.go),
	// made on its first use.
	scalars *mlctx.Exec
	// vars are the trainable variables of the training graphs, in the
	// order of their gradient outputs (set when the first is built).
	vars []*mlctx.Variable
	// clipOnHost is set when the training graphs return the gradients
	// unclipped, for clipAndApply (update_fast.go).
	clipOnHost bool
}

// newAdamUpdate returns the AdamW update (cfg's learning rate, betas,
// epsilon and weight decay) of ctx's trainable variables, keeping its
// state under scope as GoMLX's Adam does.
func newAdamUpdate(b backends.Backend, ctx *mlctx.Context, cfg Config, scope string) (*adamUpdate, error) {
	u := &adamUpdate{backend: b, cfg: cfg, scope: scope, ctx: ctx}
	var err error
	if u.exec, err = mlctx.NewExecAny(b, ctx, u.graph); err != nil {
		return nil, fmt.Errorf("grpo: update graph: %w", err)
	}
	return u, nil
}

// setVars records the trainable variables of a training graph, in the
// order of its gradient outputs. Every training graph (one per input
// shape) must train the same variables; it panics otherwise (a graph
// builder: Exec turns the panic into an error).
func (u *adamUpdate) setVars(vars []*mlctx.Variable) {
	if u.vars == nil {
		u.vars = slices.Clone(vars)
		return
	}
	if !slices.Equal(u.vars, vars) {
		panic(fmt.Sprintf("grpo: a training graph trains %d variables, another %d (or others): the trainable variables changed between graphs", len(vars), len(u.vars)))
	}
}

// graph is the graph function of the AdamW step: its inputs are the
// clipped gradients of u.vars, in order; it updates the variables and the
// optimizer state (moments, step counters) and returns a placeholder
// scalar.
//
// The arithmetic is GoMLX's Adam (optimizers.Adam, v0.26.0, with the
// options newOptimizer sets: no back-off, no clipping of steps or NaNs),
// op for op, with its variables (moments, step counters, learning rate)
// under the same names, so the results and checkpoints are the same bit
// for bit (TestAdamUpdateMatchesReference). One thing differs: the
// variables are updated from the smallest to the largest, so that the
// largest one's temporaries (the tied embedding's) exist when the other
// gradients have been freed, not beside all of them.
func (u *adamUpdate) graph(ctx *mlctx.Context, grads []*Node) *Node {
	ctx = ctx.Checked(false)
	g := grads[0].Graph()
	if len(grads) != len(u.vars) {
		panic(fmt.Sprintf("grpo: update: %d gradients for %d trainable variables", len(grads), len(u.vars)))
	}
	for i, v := range u.vars {
		if !v.Shape().Equal(grads[i].Shape()) {
			panic(fmt.Sprintf("grpo: update: gradient %d has shape %s, variable %s %s", i, grads[i].Shape(), v.ScopeAndName(), v.Shape()))
		}
	}
	dtype := dtypes.Float32
	learningRate := optimizers.LearningRateVar(ctx, dtype, u.cfg.LearningRate).ValueGraph(g)
	_ = optimizers.IncrementGlobalStepGraph(ctx, g, dtype)
	adamStep := optimizers.IncrementGlobalStepGraph(ctx.In(u.scope), g, dtype)
	beta1 := Const(g, shapes.CastAsDType(u.cfg.AdamBeta1, dtype))
	debias1 := Reciprocal(OneMinus(Pow(beta1, adamStep)))
	beta2 := Const(g, shapes.CastAsDType(u.cfg.AdamBeta2, dtype))
	debias2 := Reciprocal(OneMinus(Pow(beta2, adamStep)))
	epsilon := Const(g, shapes.CastAsDType(u.cfg.AdamEpsilon, dtype))

	order := make([]int, len(u.vars))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(u.vars[a].Shape().Size(), u.vars[b].Shape().Size()) })
	for _, i := range order {
		v, grad := u.vars[i], grads[i]
		m1Var, m2Var := u.moments(ctx, v)
		moment1 := Add(Mul(beta1, m1Var.ValueGraph(g)), Mul(OneMinus(beta1), grad))
		m1Var.SetValueGraph(moment1)
		debiased1 := Mul(moment1, debias1)
		moment2 := Add(Mul(beta2, m2Var.ValueGraph(g)), Mul(OneMinus(beta2), Square(grad)))
		m2Var.SetValueGraph(moment2)
		denominator := Add(Sqrt(Mul(moment2, debias2)), epsilon)
		value := v.ValueGraph(g)
		step := Div(Mul(learningRate, debiased1), denominator)
		if u.cfg.WeightDecay > 0 && decays(v) {
			step = Add(step, Mul(learningRate, MulScalar(value, u.cfg.WeightDecay)))
		}
		v.SetValueGraph(Sub(value, step))
	}
	return ScalarZero(g, dtypes.Float32)
}

// noDecay are the name patterns of the parameters HF's Trainer keeps out
// of weight decay (transformers 5.24, Trainer.get_decay_parameter_names):
// biases and normalization weights.
var noDecay = regexp.MustCompile(`bias|layernorm|rmsnorm|(?:^|\.)norm(?:$|\.)|_norm(?:$|\.)`)

// decays reports whether weight decay applies to v, as HF's Trainer
// decides it from the parameter's name (v's scope and name are the HF
// name with "/" for "."): not to biases and normalization weights.
func decays(v *mlctx.Variable) bool {
	name := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(v.ScopeAndName(), mlctx.ScopeSeparator), mlctx.ScopeSeparator, "."))
	return !noDecay.MatchString(name)
}

// moments returns the AdamW moment variables of v (zero at first), named
// as GoMLX's Adam names them.
func (u *adamUpdate) moments(ctx *mlctx.Context, v *mlctx.Variable) (m1, m2 *mlctx.Variable) {
	c := ctx.InAbsPath(mlctx.ScopeSeparator + u.scope + v.Scope()).WithInitializer(initializers.Zero)
	shape := v.Shape().Clone()
	shape.DType = dtypes.Float32
	m1 = c.VariableWithShape(v.Name()+"_1st_moment", shape).SetTrainable(false)
	m2 = c.VariableWithShape(v.Name()+"_2nd_moment", shape).SetTrainable(false)
	return m1, m2
}

// apply takes the AdamW step from grads (the training graph's gradient
// outputs), donating their buffers to the update executable: the tensors
// are unusable afterwards.
func (u *adamUpdate) apply(grads []*tensors.Tensor) error {
	if u.loopable() {
		return u.applyLoops(grads, 1)
	}
	args := make([]any, len(grads))
	for i, gr := range grads {
		d, err := DonateTensorBuffer(gr, u.backend, 0)
		if err != nil {
			return fmt.Errorf("grpo: update: gradient %d: %w", i, err)
		}
		args[i] = d
	}
	outs, err := u.exec.Exec(args...)
	if err != nil {
		return fmt.Errorf("grpo: update: %w", err)
	}
	for _, o := range outs {
		o.FinalizeAll()
	}
	return nil
}

// dropGradients frees the gradient outputs of a step that is not taken.
func dropGradients(grads []*tensors.Tensor) {
	for _, gr := range grads {
		gr.FinalizeAll()
	}
}
