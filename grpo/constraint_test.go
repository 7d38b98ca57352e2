package grpo

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/model"
)

// TestAllowedInputs packs a trie's allowed tokens for two rows (one
// finished, one padding row) and checks them by hand.
func TestAllowedInputs(t *testing.T) {
	const eos = 9
	trie := model.NewTrie([][]int{{3}, {4, 5}}, eos)
	rows := []*row{
		{PromptIDs: []int32{1, 2}, IDs: []int32{4, 5, eos}},
		{PromptIDs: []int32{1}, IDs: []int32{3, eos}},
	}
	mb := packRowsShape(rows, 3, 2, 4, false)
	ids, any := mb.allowedInputs(trie)
	if got := ids.Shape().Dimensions; len(got) != 3 || got[0] != 3 || got[1] != 4 || got[2] != 2 {
		t.Fatalf("ids shape %v, want [3 4 2]", got)
	}
	gotIDs := tensors.MustCopyFlatData[int32](ids)
	gotAny := tensors.MustCopyFlatData[float32](any)
	// Each position: the allowed ids padded with −1 (order as the trie
	// gives them, compared as sets), or "any" past the completion.
	want := [][]int32{
		{3, 4}, {5, -1}, {eos, -1}, nil, // row 0: 4 5 EOS
		{3, 4}, {eos, -1}, nil, nil, // row 1: 3 EOS
		nil, nil, nil, nil, // padding row
	}
	for i, w := range want {
		if w == nil {
			if gotAny[i] != 1 {
				t.Errorf("position %d: any = %v, want 1", i, gotAny[i])
			}
			continue
		}
		g := gotIDs[2*i : 2*i+2]
		same := (g[0] == w[0] && g[1] == w[1]) || (g[0] == w[1] && g[1] == w[0])
		if gotAny[i] != 0 || !same {
			t.Errorf("position %d: ids %v any %v, want %v any 0", i, g, gotAny[i], w)
		}
	}
}

// TestMaskLogits: the masked log-probs and entropy equal the log-softmax
// over the allowed tokens only, computed here in float64.
func TestMaskLogits(t *testing.T) {
	b := backend.Must("")
	logits := []float32{0.5, -1, 2, 0.25, 1, 3, -2, 0} // [1, 2, 4]
	ids := []int32{0, 2, -1, -1}                       // pos 0: {0, 2}; pos 1: any
	any := []float32{0, 1}
	tokens := []int32{2, 1}
	exec, err := graph.NewExec(b, func(l, i, a, tok *graph.Node) []*graph.Node {
		logp, ent := model.TokenLogProbs(MaskLogits(l, i, a), tok, 2)
		return []*graph.Node{logp, ent}
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exec.Exec(tensors.FromFlatDataAndDimensions(logits, 1, 2, 4), tensors.FromFlatDataAndDimensions(ids, 1, 2, 2),
		tensors.FromFlatDataAndDimensions(any, 1, 2), tensors.FromFlatDataAndDimensions(tokens, 1, 2))
	if err != nil {
		t.Fatal(err)
	}
	logp, ent := tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
	ref := func(ls []float64, k int) (float64, float64) { // log-softmax at temperature 2
		var z float64
		for _, l := range ls {
			z += math.Exp(l / 2)
		}
		var h float64
		for _, l := range ls {
			p := math.Exp(l/2) / z
			h -= p * math.Log(p)
		}
		return ls[k]/2 - math.Log(z), h
	}
	wantLogp0, wantEnt0 := ref([]float64{0.5, 2}, 1)
	wantLogp1, wantEnt1 := ref([]float64{1, 3, -2, 0}, 1)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"logp[0]", float64(logp[0]), wantLogp0}, {"entropy[0]", float64(ent[0]), wantEnt0},
		{"logp[1]", float64(logp[1]), wantLogp1}, {"entropy[1]", float64(ent[1]), wantEnt1},
	} {
		if math.Abs(c.got-c.want) > 1e-5 {
			t.Errorf("%s = %.6f, want %.6f", c.name, c.got, c.want)
		}
	}
}

// TestAllowedInputsDense: a list longer than denseAbove, with the
// vocabulary known, comes as a dense mask, and MaskLogits gives the same
// logits from it as from the padded id lists.
func TestAllowedInputsDense(t *testing.T) {
	const vocab, eos = 100, 99
	var seqs [][]int
	for id := range denseAbove + 1 { // 65 one-token answers
		seqs = append(seqs, []int{id})
	}
	trie := model.NewTrie(seqs, eos)
	rows := []*row{{PromptIDs: []int32{1}, IDs: []int32{7, eos}}}
	mb := packRowsShape(rows, 1, 1, 3, false)
	dense, anyD := mb.allowedInputs(vocabConstraint{Constraint: trie, vocab: vocab})
	ids, anyI := mb.allowedInputs(trie)
	if got := dense.Shape().Dimensions; dense.DType().IsFloat() != true || len(got) != 3 || got[2] != vocab {
		t.Fatalf("dense mask %v %v, want float [1 3 %d]", dense.DType(), got, vocab)
	}
	m := tensors.MustCopyFlatData[float32](dense)
	for id := range vocab {
		want := float32(0)
		if id <= denseAbove {
			want = 1
		}
		if m[id] != want || m[vocab+id] != float32(b2i(id == eos)) {
			t.Fatalf("token %d: mask %v / %v", id, m[id], m[vocab+id])
		}
	}
	b := backend.Must("")
	exec, err := graph.NewExec(b, func(l, i, a *graph.Node) *graph.Node { return MaskLogits(l, i, a) })
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, 3*vocab)
	for i := range logits {
		logits[i] = float32(i%7) - 3
	}
	lt := func() *tensors.Tensor { return tensors.FromFlatDataAndDimensions(logits, 1, 3, vocab) }
	o1, err := exec.Exec(lt(), dense, anyD)
	if err != nil {
		t.Fatal(err)
	}
	exec2, _ := graph.NewExec(b, func(l, i, a *graph.Node) *graph.Node { return MaskLogits(l, i, a) })
	o2, err := exec2.Exec(lt(), ids, anyI)
	if err != nil {
		t.Fatal(err)
	}
	a, c := tensors.MustCopyFlatData[float32](o1[0]), tensors.MustCopyFlatData[float32](o2[0])
	for i := range a {
		if a[i] != c[i] {
			t.Fatalf("logit %d: dense %v, ids %v", i, a[i], c[i])
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
