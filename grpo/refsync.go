package grpo

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// ReferenceSyncer is an optional interface of a Policy whose reference
// model is a copy of its own weights (a ReferenceContexter whose
// ReferenceContext is not the policy's Context): the trainer calls
// SyncReference for Config.SyncRefModel (TR-DPO's reference updates).
// LMPolicy implements it for full fine-tuning.
type ReferenceSyncer interface {
	ReferenceContexter
	// SyncReference sets every reference weight r to α·p + (1 − α)·r,
	// where p is the policy's weight of the same name and α is in [0, 1].
	SyncReference(alpha float64) error
}

var _ ReferenceSyncer = (*LMPolicy)(nil)

// SyncReference moves full fine-tuning's reference copy toward the
// policy's current weights: every reference weight r becomes α·p +
// (1 − α)·r, in float32 as TRL's SyncRefModelCallback computes it on
// float32 parameters (r·(1 − α), then plus α·p). It runs on the model's
// backend as one executable over every weight, which is handed the
// reference's buffers to overwrite (GoMLX's context.Exec donates the
// variables it changes), so no second copy of the weights is made. It is
// an error for a policy with a LoRA adapter, whose reference is the base
// model without the adapter, and before the reference copy exists
// (ReferenceContext makes it).
func (p *LMPolicy) SyncReference(alpha float64) error {
	if p.adapter != nil {
		return errors.New("grpo: SyncReference: a LoRA policy's reference model is its base model without the adapter, not a copy of its own: there is nothing to sync")
	}
	if p.ref == nil {
		return errors.New("grpo: SyncReference: the policy has no reference copy yet (ReferenceContext makes it, as NewTrainer does for Beta ≠ 0)")
	}
	if !(alpha >= 0 && alpha <= 1) {
		return fmt.Errorf("grpo: SyncReference: alpha %v is not in [0, 1]", alpha)
	}
	pol, ref, err := p.syncPairs()
	if err != nil {
		return err
	}
	if p.syncExec == nil {
		exec, err := mlctx.NewExecAny(p.ref.Backend(), p.ref.Context(), func(ctx *mlctx.Context, in []*Node) *Node {
			return syncGraph(ref, in)
		})
		if err != nil {
			return fmt.Errorf("grpo: SyncReference: %w", err)
		}
		p.syncExec = exec.SetMaxCache(1)
	}
	// As TRL: the policy's share α and the reference's 1 − α are computed
	// in float64, then used as float32 scalars of float32 arithmetic.
	args := []any{float32(alpha), float32(1 - alpha)}
	for _, v := range pol {
		value, err := v.Value()
		if err != nil {
			return fmt.Errorf("grpo: SyncReference: %s: %w", v.ScopeAndName(), err)
		}
		args = append(args, value)
	}
	outs, err := p.syncExec.Exec(args...)
	if err != nil {
		return fmt.Errorf("grpo: SyncReference: %w", err)
	}
	for _, o := range outs {
		o.FinalizeAll()
	}
	return nil
}

// syncPairs returns the policy's and the reference's weight variables,
// pairwise of the same name and shape.
func (p *LMPolicy) syncPairs() (pol, ref []*mlctx.Variable, err error) {
	pol, ref = p.model.BaseVariables(), p.ref.BaseVariables()
	n := len(p.model.Config().Weights())
	if len(pol) != n || len(ref) != n {
		return nil, nil, fmt.Errorf("grpo: SyncReference: %d of the policy's and %d of the reference's %d weights are float32 variables; want all", len(pol), len(ref), n)
	}
	for i := range pol {
		if pol[i].ScopeAndName() != ref[i].ScopeAndName() || !pol[i].Shape().Equal(ref[i].Shape()) {
			return nil, nil, fmt.Errorf("grpo: SyncReference: policy weight %s %s, reference weight %s %s",
				pol[i].ScopeAndName(), pol[i].Shape(), ref[i].ScopeAndName(), ref[i].Shape())
		}
	}
	return pol, ref, nil
}

// syncGraph sets each of ref to ref·keep + p·alpha, for in = alpha, keep,
// then the policy's weights in ref's order. The smallest variables go
// first (as in the AdamW update), so the largest one's temporary exists
// alone.
func syncGraph(ref []*mlctx.Variable, in []*Node) *Node {
	if len(in) != 2+len(ref) {
		panic(fmt.Sprintf("grpo: reference sync: %d inputs for %d weights", len(in), len(ref)))
	}
	g := in[0].Graph()
	alpha, keep := in[0], in[1]
	order := make([]int, len(ref))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ref[a].Shape().Size(), ref[b].Shape().Size()) })
	for _, i := range order {
		v := ref[i]
		v.SetValueGraph(Add(Mul(v.ValueGraph(g), keep), Mul(in[2+i], alpha)))
	}
	return ScalarZero(g, dtypes.Float32)
}
