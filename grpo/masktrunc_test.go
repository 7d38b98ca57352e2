package grpo

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
)

// rowsSource is a source that returns fixed rows (copies) for every
// rollout batch.
type rowsSource []row

func (s rowsSource) rollouts(context.Context, *Trainer, int, *rewardTally) ([]*row, error) {
	out := make([]*row, len(s))
	for i := range s {
		r := s[i]
		out[i] = &r
	}
	return out, nil
}

// TestMaskTruncatedCompletions checks mask_truncated_completions and the
// completion metrics against TRL 1.10's _generate_and_score_completions
// and _compute_loss, with the numbers worked out by hand below:
//
//   - is_truncated: the completion did not end with EOS (here: no stop
//     token ended it, row.Truncated); clipped_ratio = mean(is_truncated)
//     over every row, masked or not;
//   - completion length = the model's tokens (sum(tool_mask) with tools);
//     mean/min/max_length over every row, mean/min/max_terminated_length
//     over the rows not truncated (0 when there is none);
//   - with the mask, completion_mask (and so the loss mask and
//     num_items_in_batch) is 0 over truncated rows, which still count
//     among the rows: grpo's mean over rows and dr_grpo's B × L.
//
// The loss is Σ w·l for a per-token loss l = position + 1, so each value
// below is TRL's normalisation of that l: dapo Σ(m·l) / num_items_in_batch;
// grpo mean over rows of Σ(m·l)/max(Σm, 1), / gradient accumulation;
// bnpo per micro-batch Σ(m·l)/max(Σm, 1), / gradient accumulation;
// dr_grpo Σ(m·l) / (rows × max_completion_length).
func TestMaskTruncatedCompletions(t *testing.T) {
	ids := func(first, n int, eos bool) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(first + i)
		}
		if eos {
			out[n-1] = 1
		}
		return out
	}
	// Set A (L = 5): lengths 3 (EOS), 5 (cut), 2 (EOS), 5 (cut); Σ l per
	// row 6, 15, 3, 15.
	plain := rowsSource{
		{IDs: ids(10, 3, true)},
		{IDs: ids(20, 5, false), Truncated: true},
		{IDs: ids(30, 2, true)},
		{IDs: ids(40, 5, false), Truncated: true},
	}
	// Set B (L = 8): tool trajectories, the tool's tokens at positions 3–4
	// (l = 3, 4) are context. Row 0: 6 tokens, 4 the model's (l = 1, 2, 5,
	// 6: Σ 14), ended by EOS; row 1: 5 tokens, 3 the model's (l = 1, 2, 5:
	// Σ 8), cut.
	tools := rowsSource{
		{IDs: ids(50, 6, true), ToolMask: []int32{1, 1, 0, 0, 1, 1}},
		{IDs: ids(70, 5, false), ToolMask: []int32{1, 1, 0, 0, 1}, Truncated: true},
	}
	// Set C (L = 5): every row cut; Σ l 15 each.
	allCut := rowsSource{
		{IDs: ids(20, 5, false), Truncated: true},
		{IDs: ids(40, 5, false), Truncated: true},
	}
	metricsA := map[string]float64{
		"completions/clipped_ratio": 2.0 / 4, "completions/mean_length": 15.0 / 4, "completions/min_length": 2, "completions/max_length": 5,
		"completions/mean_terminated_length": 5.0 / 2, "completions/min_terminated_length": 2, "completions/max_terminated_length": 3,
	}
	metricsB := map[string]float64{
		"completions/clipped_ratio": 0.5, "completions/mean_length": 7.0 / 2, "completions/min_length": 3, "completions/max_length": 4,
		"completions/mean_terminated_length": 4, "completions/min_terminated_length": 4, "completions/max_terminated_length": 4,
	}
	metricsC := map[string]float64{
		"completions/clipped_ratio": 1, "completions/mean_length": 5, "completions/min_length": 5, "completions/max_length": 5,
		"completions/mean_terminated_length": 0, "completions/min_terminated_length": 0, "completions/max_terminated_length": 0,
	}
	for _, tc := range []struct {
		rows       rowsSource
		maxLen     int
		batch, ga  int // per_device_train_batch_size, gradient_accumulation_steps
		mask       bool
		lossType   loss.Type
		numItems   int     // Σ loss mask: TRL's num_items_in_batch
		loss       float64 // TRL's loss for l = position + 1
		metrics    map[string]float64
		setName    string
		lossByHand string
	}{
		{plain, 5, 4, 1, false, loss.DAPO, 15, 39.0 / 15, metricsA, "A", "(6+15+3+15)/15"},
		{plain, 5, 4, 1, true, loss.DAPO, 5, 9.0 / 5, metricsA, "A", "(6+3)/5"},
		{plain, 5, 4, 1, false, loss.GRPO, 15, (2 + 3 + 1.5 + 3) / 4, metricsA, "A", "(6/3+15/5+3/2+15/5)/4"},
		{plain, 5, 4, 1, true, loss.GRPO, 5, (2 + 1.5) / 4, metricsA, "A", "(6/3+0+3/2+0)/4"},
		{plain, 5, 4, 1, true, loss.BNPO, 5, 9.0 / 5, metricsA, "A", "(6+3)/5"},
		{plain, 5, 4, 1, true, loss.DrGRPO, 5, 9.0 / 20, metricsA, "A", "(6+3)/(4·5)"},
		{plain, 5, 2, 2, false, loss.BNPO, 15, (21.0/8 + 18.0/7) / 2, metricsA, "A", "((6+15)/8 + (3+15)/7)/2"},
		{plain, 5, 2, 2, true, loss.BNPO, 5, (6.0/3 + 3.0/2) / 2, metricsA, "A", "(6/3 + 3/2)/2"},
		{plain, 5, 2, 2, true, loss.GRPO, 5, (2 + 1.5) / 4, metricsA, "A", "((6/3+0)/2 + (3/2+0)/2)/2"},
		{plain, 5, 2, 2, true, loss.DAPO, 5, 9.0 / 5, metricsA, "A", "(6+3)/5 over the generation batch"},
		{tools, 8, 2, 1, false, loss.DAPO, 7, 22.0 / 7, metricsB, "B", "(14+8)/7"},
		{tools, 8, 2, 1, true, loss.DAPO, 4, 14.0 / 4, metricsB, "B", "14/4"},
		{tools, 8, 2, 1, false, loss.GRPO, 7, (14.0/4 + 8.0/3) / 2, metricsB, "B", "(14/4+8/3)/2"},
		{tools, 8, 2, 1, true, loss.GRPO, 4, 14.0 / 4 / 2, metricsB, "B", "(14/4+0)/2"},
		{tools, 8, 2, 1, true, loss.DrGRPO, 4, 14.0 / 16, metricsB, "B", "14/(2·8)"},
		{allCut, 5, 2, 1, false, loss.DAPO, 10, 3, metricsC, "C", "30/10"},
		{allCut, 5, 2, 1, true, loss.DAPO, 0, 0, metricsC, "C", "0/max(0, 1)"},
		{allCut, 5, 2, 1, true, loss.GRPO, 0, 0, metricsC, "C", "0"},
		{allCut, 5, 2, 1, true, loss.BNPO, 0, 0, metricsC, "C", "0"},
	} {
		name := fmt.Sprintf("set %s %s batch %d×%d mask %v", tc.setName, tc.lossType, tc.batch, tc.ga, tc.mask)
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.NumGenerations, cfg.BatchSize, cfg.GradientAccumulationSteps = 2, tc.batch, tc.ga
			cfg.MaxCompletionLength, cfg.LossType, cfg.MaskTruncatedCompletions = tc.maxLen, tc.lossType, tc.mask
			tr, err := NewTrainer(refSyncPolicy(t), cfg, reward.Named{Name: "r", Weight: 1, Scorer: reward.Func(func(_, _, _ string) float64 { return 0 })})
			if err != nil {
				t.Fatal(err)
			}
			rows := make(rowsSource, len(tc.rows))
			for i, r := range tc.rows {
				r.PromptIDs = []int32{3, 4}
				r.Rewards = []float64{float64(i % 2)} // every group has a spread
				rows[i] = r
			}
			buf, err := tr.makeRollouts(context.Background(), rows, 0)
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.metrics {
				if got := buf.Metrics[k]; math.Abs(got-want) > 1e-12 {
					t.Errorf("%s = %v, want %v", k, got, want)
				}
			}
			items := 0
			var got float64
			for _, mb := range buf.Micro {
				items += mb.tokens()
				for b := range mb.B {
					for c := range mb.C {
						got += float64(mb.Weights[b*mb.C+c]) * float64(c+1)
					}
				}
			}
			if items != tc.numItems {
				t.Errorf("num_items_in_batch %d, want %d", items, tc.numItems)
			}
			if math.Abs(got-tc.loss) > 1e-6*max(1, tc.loss) {
				t.Errorf("loss %v, want %s = %v", got, tc.lossByHand, tc.loss)
			}
		})
	}
}

// TestTruncatedAtTheLimit: as TRL's is_truncated (the last token is not
// EOS), a completion whose EOS is its MaxCompletionLength-th token is not
// truncated, and one that the limit cuts before its EOS is.
func TestTruncatedAtTheLimit(t *testing.T) {
	m, tok, err := model.NewTiny(t.TempDir(), refSyncWords, model.TinyConfig{Hidden: 32, Layers: 1}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	cat := tok.Tokenizer.Encode("cat", false)
	if len(cat) != 1 {
		t.Fatalf("cat is %d tokens", len(cat))
	}
	// Every completion is "cat" then EOS.
	p, err := NewLMPolicy(m, nil, tok, &LMPolicyOptions{Constraint: model.NewTrie([][]int{cat}, tok.EOS[0]), NoSpecialTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		maxLen    int
		ids       []int32
		truncated bool
	}{
		{2, []int32{int32(cat[0]), int32(tok.EOS[0])}, false},
		{1, []int32{int32(cat[0])}, true},
		{3, []int32{int32(cat[0]), int32(tok.EOS[0])}, false},
	} {
		opts := GenerateOptions{MaxCompletionLength: tc.maxLen, Sampling: model.Sampling{Temperature: 1, TopP: 1}, Seed: 1}
		out, err := p.Generate(context.Background(), []dataset.Example{{Prompt: "say cat"}}, 2, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range out {
			if !slices.Equal(c.IDs, tc.ids) || c.Truncated != tc.truncated {
				t.Errorf("max_completion_length %d: ids %v truncated %v, want %v truncated %v", tc.maxLen, c.IDs, c.Truncated, tc.ids, tc.truncated)
			}
		}
	}
}
