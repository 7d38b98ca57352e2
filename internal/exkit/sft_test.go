package exkit

import (
	"context"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/dataset"
)

// TestSFTLeavesNoOptimizerState: after SFT the policy's context holds
// exactly the variables it held before (no Adam moments, step counts or
// learning rate), and the weights have moved. A leftover first moment
// with a reset second moment and step count makes GRPO's first AdamW
// steps many times larger than its learning rate, which wrecked the GSM8K
// warm start of an earlier version.
func TestSFTLeavesNoOptimizerState(t *testing.T) {
	c := &Config{Train: "full", Out: t.TempDir(), Seed: 1}
	s, err := Load("test", c, Tiny{Words: []string{"cat", "dog"}, Hidden: 16, Layers: 1, Heads: 2, Intermediate: 32, MaxPositions: 64})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Policy(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	for v := range p.Context().IterVariables() {
		before[v.ScopeAndName()] = true
	}
	emb := p.TrainableVariables()[0]
	w0 := flat(t, emb)
	pairs := []Pair{{Prompt: dataset.Example{Prompt: "say cat"}, Target: "cat"}, {Prompt: dataset.Example{Prompt: "say dog"}, Target: "dog"}}
	if err := SFT(context.Background(), s, p, pairs, 3, 2, 1e-2, 1, nil); err != nil {
		t.Fatal(err)
	}
	n := 0
	for v := range p.Context().IterVariables() {
		n++
		if !before[v.ScopeAndName()] {
			t.Errorf("SFT left variable %s in the policy's context", v.ScopeAndName())
		}
	}
	if n != len(before) {
		t.Errorf("%d variables after SFT, %d before", n, len(before))
	}
	moved := false
	for i, x := range flat(t, emb) {
		moved = moved || x != w0[i]
	}
	if !moved {
		t.Errorf("SFT did not change %s", emb.ScopeAndName())
	}
	if err := SFT(context.Background(), s, p, nil, 3, 2, 1e-2, 1, nil); err == nil {
		t.Error("SFT with no pairs: no error")
	}
}

func flat(t *testing.T, v *mlctx.Variable) []float32 {
	t.Helper()
	val, err := v.Value()
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](val)
}
