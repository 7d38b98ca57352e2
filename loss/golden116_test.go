package loss

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/internal/goldentest"
)

// trl116Dir holds what TRL 1.16.0's own GRPOTrainer computed
// (internal/trlref/losses.py); package grpo's tests read it too.
var trl116Dir = filepath.Join("..", "grpo", "testdata", "trl-1.16")

// trl116 is the part of golden.json these tests read.
type trl116 struct {
	Inputs struct {
		ToolMask [][]float32 `json:"tool_mask"`
	} `json:"inputs"`
	AdvantageSets map[string]struct {
		Advantages []*float64 `json:"advantages"`
	} `json:"advantage_sets"`
	Variants map[string]struct {
		Params struct {
			LossType           Type                    `json:"loss_type"`
			Level              ImportanceSamplingLevel `json:"importance_sampling_level"`
			Beta               float64                 `json:"beta"`
			Epsilon            float64                 `json:"epsilon"`
			EpsilonHigh        float64                 `json:"epsilon_high"`
			Delta              *float64                `json:"delta"`
			SAPOPos            float64                 `json:"sapo_temperature_pos"`
			SAPONeg            float64                 `json:"sapo_temperature_neg"`
			VESPOKPos          float64                 `json:"vespo_k_pos"`
			VESPOLambdaPos     float64                 `json:"vespo_lambda_pos"`
			VESPOKNeg          float64                 `json:"vespo_k_neg"`
			VESPOLambdaNeg     float64                 `json:"vespo_lambda_neg"`
			TopEntropyQuantile float64                 `json:"top_entropy_quantile"`
			OffPolicyThreshold *float64                `json:"off_policy_mask_threshold"`
			BiasCorrectionKL   bool                    `json:"use_bias_correction_kl"`
			EntropyCoef        float64                 `json:"entropy_coef"`
			MaxCompletionLen   int                     `json:"max_completion_length"`
			Old                string                  `json:"old"`
			Advantages         string                  `json:"advantages"`
			ToolMask           bool                    `json:"tool_mask"`
		} `json:"params"`
		Loss           float64     `json:"loss"`
		NumItems       int         `json:"num_items_in_batch"`
		CompletionMask [][]float32 `json:"completion_mask"`
	} `json:"variants"`
}

// TestLossGoldenTRL116 feeds TRL 1.16's own log-probs (policy, old,
// reference), entropies, advantages and loss masks (completion mask after
// mask_truncated_completions, times the tool mask) through TokenLoss,
// TokenWeights and EntropyBonus for every variant TRL computed, and
// compares the per-token loss and the loss with TRL's. Needs no model: the
// inputs are in the golden files.
func TestLossGoldenTRL116(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(trl116Dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g trl116
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	ts, err := goldentest.ReadSafetensorsF32(filepath.Join(trl116Dir, "golden.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	logp, ref, ent := ts["per_token_logps"], ts["ref_per_token_logps"], ts["entropies"]
	rows, cols := logp.Shape[0], logp.Shape[1]
	b := backend.Must("")
	names := make([]string, 0, len(g.Variants))
	for n := range g.Variants {
		names = append(names, n)
	}
	sort.Strings(names)
	worstLoss, worstToken := 0.0, 0.0
	for _, name := range names {
		v := g.Variants[name]
		t.Run(name, func(t *testing.T) {
			p := v.Params
			spec := Spec{Type: p.LossType, Level: p.Level, Epsilon: p.Epsilon, EpsilonHigh: p.EpsilonHigh, Beta: p.Beta,
				UseBiasCorrectionKL: p.BiasCorrectionKL, EntropyCoef: p.EntropyCoef, OffPolicyMaskThreshold: p.OffPolicyThreshold,
				SAPOTemperaturePos: p.SAPOPos, SAPOTemperatureNeg: p.SAPONeg,
				VESPO: VESPOParams{KPos: p.VESPOKPos, LambdaPos: p.VESPOLambdaPos, KNeg: p.VESPOKNeg, LambdaNeg: p.VESPOLambdaNeg}}
			if p.Delta != nil {
				spec.Delta = *p.Delta
			}
			if p.TopEntropyQuantile < 1 {
				spec.EntropyQuantile = 1 - p.TopEntropyQuantile
			}
			mask := make([][]float32, rows)
			for i := range mask {
				mask[i] = make([]float32, cols)
				for j := range mask[i] {
					mask[i][j] = v.CompletionMask[i][j]
					if p.ToolMask && j < len(g.Inputs.ToolMask[i]) {
						mask[i][j] *= g.Inputs.ToolMask[i][j]
					}
				}
			}
			adv := make([]float32, rows)
			for i, a := range g.AdvantageSets[p.Advantages].Advantages {
				adv[i] = float32(*a)
			}
			norm := StepNormalizers{Rows: rows, Tokens: v.NumItems, MicroBatch: 1, MaxCompletionLength: p.MaxCompletionLen, Columns: cols}
			w := TokenWeights(mask, p.LossType, norm)
			em, injected := ts[name+".entropy_mask"]
			injected = injected && p.TopEntropyQuantile == 0.2 // a float32 tie: use TRL's mask (see package grpo's tests)
			offPolicy := p.Old == "offpolicy"
			exec, err := graph.NewExec(b, func(in []*graph.Node) []*graph.Node {
				li := Inputs{LogP: in[0], Ref: in[1], Adv: in[2], Mask: in[3], Entropy: in[4]}
				k := 6
				if offPolicy {
					li.Old = in[k]
					k++
				}
				if injected {
					li.EntropyMask = in[k]
				}
				terms := TokenLoss(li, spec)
				total := WeightedLoss(terms.PerToken, in[5])
				if spec.EntropyCoef != 0 {
					scale := graph.Scalar(in[0].Graph(), in[0].DType(), EntropyScale(spec.Type, norm))
					total = graph.Sub(total, graph.MulScalar(EntropyBonus(in[4], in[3], terms.EntropyMask, scale, spec.Type), spec.EntropyCoef))
				}
				return []*graph.Node{terms.PerToken, total}
			})
			if err != nil {
				t.Fatal(err)
			}
			args := []any{tensors.FromFlatDataAndDimensions(logp.Data, rows, cols), tensors.FromFlatDataAndDimensions(ref.Data, rows, cols),
				tensors.FromFlatDataAndDimensions(adv, rows), tensors.FromValue(mask), tensors.FromFlatDataAndDimensions(ent.Data, rows, cols),
				tensors.FromValue(w)}
			if offPolicy {
				old := ts["offpolicy.old_per_token_logps"]
				args = append(args, tensors.FromFlatDataAndDimensions(old.Data, rows, cols))
			}
			if injected {
				args = append(args, tensors.FromFlatDataAndDimensions(em.Data, rows, cols))
			}
			out, err := exec.Exec(args...)
			if err != nil {
				t.Fatal(err)
			}
			got := tensors.MustCopyFlatData[float32](out[0])
			want := ts[name+".per_token_loss"].Data
			for j := range want {
				if mask[j/cols][j%cols] == 0 {
					continue
				}
				d := math.Abs(float64(got[j] - want[j]))
				worstToken = max(worstToken, d)
				if d > 1e-4+1e-4*math.Abs(float64(want[j])) {
					t.Errorf("per_token_loss[%d,%d] = %.7g, TRL %.7g", j/cols, j%cols, got[j], want[j])
				}
			}
			l := float64(tensors.ToScalar[float32](out[1]))
			worstLoss = max(worstLoss, math.Abs(l-v.Loss))
			if !goldentest.CloseTo(l, v.Loss, 1e-5, 1e-4) {
				t.Errorf("loss %.8g, TRL %.8g", l, v.Loss)
			}
		})
	}
	t.Logf("%d variants: largest |diff| loss %.2g, per-token loss %.2g", len(names), worstLoss, worstToken)
}
