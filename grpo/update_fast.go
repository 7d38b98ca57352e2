package grpo

// The AdamW step on the pure-Go backend as one pass per variable.
//
// The update graph (update.go) is GoMLX's Adam, about a dozen element-wise
// ops per variable, each a full pass over the variable's memory: for
// SmolLM2-135M's 134.5M parameters that was 0.4–0.6 CPU s of every step.
// On the "go" backend, whose buffers are plain Go slices the program may
// read and write (shared buffers), the step instead runs a small graph
// for the scalars (step counters, learning rate, bias corrections: the
// same ops as the update graph, so the same float32 values) and then
// internal/adamw over each variable's weights, gradient and moments, in
// place, on both cores. The arithmetic is the graph's op for op, so the
// weights and moments are the same bit for bit
// (TestAdamUpdateMatchesReference compares both with the fused graph);
// the gradients are consumed as when they were donated.
//
// GRPOKIT_FASTOPS=off (SimpleGo's own element-wise ops) also turns this
// off, as does any other backend or a variable that is not float32.

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	"github.com/grpokit/grpokit/internal/adamw"
	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/internal/fork"
)

// adamLoops, when false (tests), keeps every update on the graph.
var adamLoops = true

// loopable reports whether the update can run as adamw loops: the "go"
// backend with its element-wise hook on and float32 variables.
func (u *adamUpdate) loopable() bool {
	if !adamLoops || !backend.IsGo(u.backend) || backend.FastElementwise() != nil {
		return false
	}
	for _, v := range u.vars {
		if v.DType() != dtypes.Float32 {
			return false
		}
	}
	return true
}

// scalarsGraph increments the step counters and returns the scalars of
// this step as a float32 vector in the order of adamw.Params' fields.
// Building it also creates the moments of every variable (zero at first,
// initialized by the executable as in the update graph).
func (u *adamUpdate) scalarsGraph(ctx *mlctx.Context, g *Graph) *Node {
	ctx = ctx.Checked(false)
	for _, v := range u.vars {
		u.moments(ctx, v)
	}
	dtype := dtypes.Float32
	lr := optimizers.LearningRateVar(ctx, dtype, u.cfg.LearningRate).ValueGraph(g)
	_ = optimizers.IncrementGlobalStepGraph(ctx, g, dtype)
	adamStep := optimizers.IncrementGlobalStepGraph(ctx.In(u.scope), g, dtype)
	beta1 := Const(g, shapes.CastAsDType(u.cfg.AdamBeta1, dtype))
	beta2 := Const(g, shapes.CastAsDType(u.cfg.AdamBeta2, dtype))
	debias1 := Reciprocal(OneMinus(Pow(beta1, adamStep)))
	debias2 := Reciprocal(OneMinus(Pow(beta2, adamStep)))
	epsilon := Const(g, shapes.CastAsDType(u.cfg.AdamEpsilon, dtype))
	decay := Scalar(g, dtype, u.cfg.WeightDecay)
	return Stack([]*Node{lr, beta1, OneMinus(beta1), beta2, OneMinus(beta2), debias1, debias2, epsilon, decay}, 0)
}

// clipAndApply is the end of the training graph and the update, for the
// loops: the training graph returns the gradients unclipped (clipOnHost)
// and this computes their global norm, the finite check and the
// clipping coefficient as the graph would (trainGraph: the same
// operations in the same order, so the same bits), then takes the AdamW
// step with each gradient value multiplied by the coefficient inside the
// adamw pass. That saves the graph's Square and clipping Mul, two full
// passes over every gradient, and runs the norm's sums (adamw.SumSquares,
// sequential as the graph's reductions) on all cores, a variable per core. It
// returns the norm and whether the step was taken (loss and norm
// finite); the gradients are consumed either way.
func (u *adamUpdate) clipAndApply(loss float32, grads []*tensors.Tensor, maxNorm float64) (norm float32, applied bool, err error) {
	flat := make([][]float32, len(grads))
	for i, t := range grads {
		if flat[i], err = hostF32(u.backend, t); err != nil {
			dropGradients(grads)
			return 0, false, fmt.Errorf("grpo: gradient %d: %w", i, err)
		}
	}
	rows := make([]int, len(grads))
	for i, t := range grads {
		rows[i] = adamw.RowLength(t.Shape().Dimensions)
	}
	sums := sumSquares(flat, rows)
	sq := sums[0]
	for _, s := range sums[1:] {
		sq += s
	}
	norm = float32(math.Sqrt(sq))
	if !finite(float64(loss)) || !finite(float64(norm)) {
		dropGradients(grads)
		return norm, false, nil
	}
	coef := float32(1)
	if maxNorm > 0 {
		// torch.nn.utils.clip_grad_norm_: scale by min(1, max/(norm+1e-6)).
		coef = min(float32(maxNorm)/(norm+float32(1e-6)), 1)
	}
	return norm, true, u.applyLoops(grads, coef)
}

// sumSquares returns adamw.SumSquares of each slice (in rows of rows[i]),
// computed on up to GOMAXPROCS goroutines that take whole slices, largest
// first.
func sumSquares(xs [][]float32, rows []int) []float64 {
	sums := make([]float64, len(xs))
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(xs[b]), len(xs[a])) })
	var next atomic.Int64
	work := func() {
		for {
			k := int(next.Add(1)) - 1
			if k >= len(order) {
				return
			}
			i := order[k]
			sums[i] = adamw.SumSquares(xs[i], rows[i])
		}
	}
	fork.Run(min(runtime.GOMAXPROCS(0), len(xs)), func(int) { work() })
	return sums
}

// applyLoops is apply as adamw loops over the variables' buffers, with
// the gradients multiplied by scale (1: as they are).
func (u *adamUpdate) applyLoops(grads []*tensors.Tensor, scale float32) error {
	defer dropGradients(grads)
	if u.scalars == nil {
		var err error
		if u.scalars, err = mlctx.NewExecAny(u.backend, u.ctx, u.scalarsGraph); err != nil {
			return fmt.Errorf("grpo: update scalars graph: %w", err)
		}
	}
	outs, err := u.scalars.Exec()
	if err != nil {
		return fmt.Errorf("grpo: update scalars: %w", err)
	}
	s := tensors.MustCopyFlatData[float32](outs[0])
	outs[0].FinalizeAll()
	p := adamw.Params{LR: s[0], Beta1: s[1], OneMinusBeta1: s[2], Beta2: s[3], OneMinusBeta2: s[4],
		Debias1: s[5], Debias2: s[6], Epsilon: s[7], WeightDecay: s[8], GradScale: scale}
	ctx := u.ctx.Checked(false)
	for i, v := range u.vars {
		m1, m2 := u.moments(ctx, v)
		var flat [4][]float32 // weights, gradient, moments
		for k, x := range []*mlctx.Variable{v, nil, m1, m2} {
			t := grads[i]
			if x != nil {
				if t, err = x.Value(); err != nil {
					return fmt.Errorf("grpo: update %s: %w", v.ScopeAndName(), err)
				}
			}
			if flat[k], err = hostF32(u.backend, t); err != nil {
				return fmt.Errorf("grpo: update %s: %w", v.ScopeAndName(), err)
			}
		}
		pv := p
		if !decays(v) {
			pv.WeightDecay = 0
		}
		adamw.Step(pv, flat[0], flat[1], flat[2], flat[3])
		for _, x := range []*mlctx.Variable{v, m1, m2} {
			// A local copy made by a read (a checkpoint) is stale now.
			t, _ := x.Value()
			t.FinalizeLocal()
		}
	}
	return nil
}

// hostF32 returns the float32 data of t's buffer on b itself (no copy):
// writes to it change t.
func hostF32(b backends.Backend, t *tensors.Tensor) ([]float32, error) {
	buf, err := t.Buffer(b, 0)
	if err != nil {
		return nil, err
	}
	data, err := b.BufferData(buf)
	if err != nil {
		return nil, err
	}
	flat, ok := data.([]float32)
	if !ok || len(flat) != t.Size() {
		return nil, fmt.Errorf("buffer of %s holds %T, want %d float32", t.Shape(), data, t.Size())
	}
	return flat, nil
}
