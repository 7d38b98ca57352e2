package model

import (
	"math"
	"testing"
	"time"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// lossAndGrads returns the sum of real-token log-probs and its gradient
// with respect to every trainable variable.
func lossAndGrads(t *testing.T, m *Model, b Batch) (float64, []*tensors.Tensor, []*mlctx.Variable) {
	t.Helper()
	ids, mask, pos, err := b.tensors(m.cfg.VocabSize)
	if err != nil {
		t.Fatal(err)
	}
	vars := m.TrainableVariables()
	e, err := mlctx.NewExec(m.Backend(), m.Context(), func(ctx *mlctx.Context, ids, mask, pos *Node) []*Node {
		lp, _ := TokenLogProbs(m.LogitsGraph(ctx, ids, mask, pos), ids, 1) // targets = ids: a valid, cheap loss
		loss := ReduceAllSum(Mul(lp, ConvertDType(mask, lp.DType())))
		grads := Gradient(loss, func() []*Node {
			var ns []*Node
			for _, v := range vars {
				ns = append(ns, v.ValueGraph(ids.Graph()))
			}
			return ns
		}()...)
		return append([]*Node{loss}, grads...)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Exec(ids, mask, pos)
	if err != nil {
		t.Fatal(err)
	}
	return float64(out[0].Value().(float32)), out[1:], vars
}

func TestGradientMatchesFiniteDifferences(t *testing.T) {
	g := loadGolden(t, "qwen2-tiny")
	m, err := Load(g.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := g.batch()
	start := time.Now()
	_, grads, vars := lossAndGrads(t, m, b)
	t.Logf("forward+backward (compile included): %v", time.Since(start))
	loss := func() float64 {
		l, _, _ := lossAndGrads(t, m, b)
		return l
	}
	for _, probe := range []struct {
		name string
		idx  int
	}{
		{"model.layers.0.self_attn.q_proj.weight", 5},
		{"model.layers.1.self_attn.k_proj.bias", 3},
		{"model.layers.1.mlp.down_proj.weight", 100},
		{"model.embed_tokens.weight", 64*b.IDs[0][1] + 7}, // row of a token in the batch
		{"model.norm.weight", 9},
	} {
		vi := -1
		for i, v := range vars {
			if n, _ := NameOf(v.Scope(), v.Name()); n == probe.name {
				vi = i
			}
		}
		if vi < 0 {
			t.Fatalf("no trainable variable %s", probe.name)
		}
		analytic := float64(tensors.MustCopyFlatData[float32](grads[vi])[probe.idx])
		data, shape, _ := m.Weight(probe.name)
		const eps = 1e-2
		orig := data[probe.idx]
		data[probe.idx] = orig + eps
		m.SetWeight(probe.name, data, shape)
		up := loss()
		data[probe.idx] = orig - eps
		m.SetWeight(probe.name, data, shape)
		down := loss()
		data[probe.idx] = orig
		m.SetWeight(probe.name, data, shape)
		numeric := (up - down) / (2 * eps)
		if math.Abs(numeric-analytic) > 2e-2*math.Max(1, math.Abs(analytic)) {
			t.Errorf("%s[%d]: analytic %g, finite differences %g", probe.name, probe.idx, analytic, numeric)
		} else {
			t.Logf("%s[%d]: analytic %g, finite differences %g", probe.name, probe.idx, analytic, numeric)
		}
	}
}
