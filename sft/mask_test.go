package sft_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/agent"
	"github.com/grpokit/grpokit/grpo/grpotest"
	"github.com/grpokit/grpokit/sft"
)

// bigramLoss is the mean of −log p(token | previous token) over the
// completion tokens mask keeps (nil: all), from the bigram table in
// float64: the reference for a Step's loss.
func bigramLoss(table []float32, v int, prompt, completion, mask []int32) float64 {
	var sum float64
	n := 0
	prev := prompt[len(prompt)-1]
	for j, tok := range completion {
		if mask == nil || mask[j] == 1 {
			row := table[int(prev)*v : int(prev+1)*v]
			mx := math.Inf(-1)
			for _, x := range row {
				mx = math.Max(mx, float64(x))
			}
			var z float64
			for _, x := range row {
				z += math.Exp(float64(x) - mx)
			}
			sum += -(float64(row[tok]) - mx - math.Log(z))
			n++
		}
		prev = tok
	}
	return sum / float64(n)
}

// TestStepMask: a Pair's Mask keeps tokens out of the loss (they stay
// context for the tokens after them): the loss is the float64 mean over
// the kept tokens only, the unmasked pair's is the mean over all of them,
// and a mask of the wrong length is refused.
func TestStepMask(t *testing.T) {
	for _, tc := range []struct {
		name string
		mask []int32
	}{
		{"no mask", nil},
		{"all kept", []int32{1, 1, 1, 1}},
		{"a tool result masked", []int32{1, 0, 0, 1}},
		{"only the end kept", []int32{0, 0, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(t)
			cfg := smallConfig(t)
			cfg.MaxCompletionLength = 8
			s, err := sft.New(p, cfg)
			if err != nil {
				t.Fatal(err)
			}
			pair := sft.Pair{PromptIDs: p.Encode("say cat"), CompletionIDs: append(p.Encode("cat dog fish"), grpotest.EOSID), Mask: tc.mask}
			want := bigramLoss(p.Table(), len(p.Vocab()), pair.PromptIDs, pair.CompletionIDs, tc.mask)
			got, err := s.Step(context.Background(), []sft.Pair{pair}, 1)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-want) > 1e-5*math.Abs(want) {
				t.Errorf("loss %.7f, float64 reference %.7f", got, want)
			}
			if all := bigramLoss(p.Table(), len(p.Vocab()), pair.PromptIDs, pair.CompletionIDs, nil); tc.mask != nil && tc.mask[1] == 0 && math.Abs(all-want) < 1e-3 {
				t.Fatalf("masked and unmasked references agree (%.4f): the case cannot tell them apart", all)
			}
		})
	}
	p := newPolicy(t)
	s, err := sft.New(p, smallConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	bad := sft.Pair{PromptIDs: p.Encode("say cat"), CompletionIDs: []int32{4, 1}, Mask: []int32{1}}
	if _, err := s.Step(context.Background(), []sft.Pair{bad}, 1); err == nil || !strings.Contains(err.Error(), "1 mask entries for 2 completion tokens") {
		t.Errorf("mask of the wrong length: error %v", err)
	}
}

// TestTrainPairsLeavesMaskedTargetsAlone: training on a pair whose middle
// tokens are masked never moves the table row that predicts only masked
// tokens (row "dog", whose one use is dog → fish), and moves it without
// the mask; the kept tokens' loss falls.
func TestTrainPairsLeavesMaskedTargetsAlone(t *testing.T) {
	for _, masked := range []bool{true, false} {
		p := newPolicy(t)
		cfg := smallConfig(t)
		cfg.MaxCompletionLength, cfg.WeightDecay = 8, 0
		s, err := sft.New(p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		pair := sft.Pair{PromptIDs: p.Encode("say cat"), CompletionIDs: append(p.Encode("cat dog fish"), grpotest.EOSID)}
		if masked {
			pair.Mask = []int32{1, 0, 0, 1}
		}
		v, dog := len(p.Vocab()), int(p.Encode("dog")[0])
		before := p.Table()[dog*v : (dog+1)*v]
		first := bigramLoss(p.Table(), v, pair.PromptIDs, pair.CompletionIDs, pair.Mask)
		if _, err := s.TrainPairs(context.Background(), []sft.Pair{pair}, sft.Options{Steps: 20}); err != nil {
			t.Fatal(err)
		}
		after := p.Table()[dog*v : (dog+1)*v]
		moved := false
		for i := range before {
			moved = moved || before[i] != after[i]
		}
		if moved == masked {
			t.Errorf("masked %v: row \"dog\" moved = %v", masked, moved)
		}
		if last := bigramLoss(p.Table(), v, pair.PromptIDs, pair.CompletionIDs, pair.Mask); last > first/2 {
			t.Errorf("masked %v: kept tokens' loss %.3f → %.3f", masked, first, last)
		}
	}
}

// TestFromTrajectory: the pair has the trajectory's prompt, completion
// and mask, the mask a copy of its own.
func TestFromTrajectory(t *testing.T) {
	tr := agent.Trajectory{PromptIDs: []int{5, 6}, IDs: []int{7, 8, 9}, Mask: []int32{1, 0, 1}}
	p := sft.FromTrajectory(tr)
	if !slices.Equal(p.PromptIDs, []int32{5, 6}) || !slices.Equal(p.CompletionIDs, []int32{7, 8, 9}) || !slices.Equal(p.Mask, []int32{1, 0, 1}) {
		t.Fatalf("pair %+v", p)
	}
	tr.Mask[0] = 0
	if p.Mask[0] != 1 {
		t.Error("the pair shares the trajectory's mask")
	}
}
