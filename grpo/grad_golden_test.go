package grpo

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/model"
)

// TestLoRAGradientsGolden is the test of the whole chain: the llama-tiny
// model with the golden PEFT adapter gives the policy and reference
// log-probs of the golden completions (prompt left-padded, completion
// sliced, temperature 1), and the gradients of each loss type with respect
// to every LoRA matrix match TRL v0.21.0's.
func TestLoRAGradientsGolden(t *testing.T) {
	g, ts := loadGoldenGRPO(t, "llama-tiny")
	pol := goldenLoRAPolicy(t, nil)
	vars := pol.TrainableVariables()
	names := loraNames(t, vars)
	if len(vars) != 8 {
		t.Fatalf("%d trainable variables, want 8 LoRA matrices: %v", len(vars), names)
	}

	// Rows exactly as TRL built them: P = 5 prompt columns, C = 8.
	rows := goldenRows(g)
	mb := packRowsShape(rows, len(rows), 5, g.MaxCompletionLength, false)
	tokens := 0
	for _, v := range mb.LossMask {
		tokens += int(v)
	}
	spec := loss.Spec{Epsilon: g.Epsilon, EpsilonHigh: g.EpsilonHigh, Beta: g.Beta}

	for _, mode := range memoryModes {
		for _, variant := range []string{"onpolicy", "offpolicy"} {
			for _, lt := range []loss.Type{loss.GRPO, loss.BNPO, loss.DrGRPO} {
				t.Run(fmt.Sprintf("%s/%s/%s", mode.name, variant, lt), func(t *testing.T) {
					mb.setWeights(lt, loss.StepNormalizers{Rows: len(rows), Tokens: tokens, MicroBatch: 1, MaxCompletionLength: g.MaxCompletionLength})
					exec, err := mlctx.NewExecAny(pol.Backend(), pol.Context(), func(ctx *mlctx.Context, in []*Node) []*Node {
						ctx = ctx.Checked(false)
						c := in[2].Shape().Dim(1)
						group := modeGroup(t, mode.shared, rows, 3)
						logp, _ := PolicyLogProbs(ctx, pol, in[0], in[1], c, LogProbsOptions{Temperature: g.Temperature, ChunkSize: mode.chunk, GradientCheckpointing: mode.checkpoint, Group: group})
						ref, _ := PolicyLogProbs(ctx, pol, in[0], in[1], c, LogProbsOptions{Temperature: g.Temperature, Reference: true, ChunkSize: mode.chunk, Group: group})
						old := StopGradient(logp)
						if variant == "offpolicy" {
							old = in[microInputs]
						}
						terms := loss.TokenLoss(loss.Inputs{LogP: logp, Old: old, Ref: StopGradient(ref), Adv: in[4]}, spec)
						loss := loss.WeightedLoss(terms.PerToken, in[3])
						values := make([]*Node, len(vars))
						for i, v := range vars {
							values[i] = v.ValueGraph(logp.Graph())
						}
						return append([]*Node{logp, ref, loss}, Gradient(loss, values...)...)
					})
					if err != nil {
						t.Fatal(err)
					}
					in := mb.inputs(false, false)
					old := ts["grpo."+variant+".old_per_token_logps"]
					in = append(in, tensors.FromFlatDataAndDimensions(old.Data, old.Shape...))
					outs, err := exec.Exec(in...)
					if err != nil {
						t.Fatal(err)
					}
					for i, name := range []string{"grpo.per_token_logps", "grpo.ref_per_token_logps"} {
						got := tensors.MustCopyFlatData[float32](outs[i])
						for j, want := range ts[name].Data {
							if mb.LossMask[j] == 1 && !closeTo(float64(got[j]), float64(want), 2e-4, 0) {
								t.Errorf("%s[%d] = %.6g, golden %.6g", name, j, got[j], want)
							}
						}
					}
					if got, want := float64(tensors.ToScalar[float32](outs[2])), g.Loss[variant][string(lt)]; !closeTo(got, want, 1e-5, 1e-4) {
						t.Errorf("loss = %.8g, golden %.8g", got, want)
					}
					for i, name := range names {
						key := fmt.Sprintf("grpo.%s.%s.grad.%s", variant, lt, name)
						want, ok := ts[key]
						if !ok {
							t.Fatalf("golden has no %s", key)
						}
						got := tensors.MustCopyFlatData[float32](outs[3+i])
						bad := 0
						for j := range want.Data {
							if !closeTo(float64(got[j]), float64(want.Data[j]), 5e-5, 1e-3) {
								if bad < 3 {
									t.Errorf("%s[%d] = %.6g, golden %.6g", key, j, got[j], want.Data[j])
								}
								bad++
							}
						}
						if bad > 0 {
							t.Errorf("%s: %d of %d values out of tolerance", key, bad, len(want.Data))
						}
					}
				})
			}
		}
	}
}

// memoryModes are the ways the golden GRPO tests build the log-probs: as
// the trainer does by default (one chunk at these sizes), in chunks of 3
// of the 8 completion positions, and in chunks with every decoder layer
// checkpointed (Config.LogitsChunkSize, Config.GradientCheckpointing), each
// with every row whole and with each group's prompt computed once
// (Config.SharePrompts; the golden rows are two groups of three rows that
// share a prompt, one left-padded). All must match the golden numbers.
var memoryModes = []struct {
	name       string
	chunk      int
	checkpoint bool
	shared     bool
}{
	{"default", 0, false, false}, {"chunk3", 3, false, false}, {"chunk3+checkpoint", 3, true, false},
	{"shared", 0, false, true}, {"shared+chunk3+checkpoint", 3, true, true},
}

// modeGroup returns the rows' prompt group under a memory mode: 0 when the
// mode keeps rows whole; it fails the test when shared rows do not group.
func modeGroup(t *testing.T, shared bool, rows []*row, g int) int {
	t.Helper()
	if !shared {
		return 0
	}
	n := sharedGroup(rows, g, len(rows))
	if n < 2 {
		t.Fatalf("the golden rows are not groups of %d with equal prompts", g)
	}
	return n
}

// goldenLoRAPolicy is llama-tiny with the golden PEFT adapter (opts as
// model.Load takes them), the policy every GRPO golden test differentiates.
func goldenLoRAPolicy(t *testing.T, opts *model.Options) *LMPolicy {
	t.Helper()
	dir := filepath.Join(sharedDir(t), "golden", "llama-tiny")
	m, err := model.Load(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	adapter, err := lora.Load(m, filepath.Join(dir, "lora"))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := NewLMPolicy(m, adapter, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// loraNames gives the golden files' key of each LoRA variable:
// base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight →
// layers.0.self_attn.q_proj.lora_A.
func loraNames(t *testing.T, vars []*mlctx.Variable) []string {
	t.Helper()
	names := make([]string, len(vars))
	for i, v := range vars {
		hf, err := model.NameOf(v.Scope(), v.Name())
		if err != nil {
			t.Fatal(err)
		}
		hf = strings.TrimSuffix(hf, ".weight")
		names[i] = hf[strings.Index(hf, "layers."):]
	}
	return names
}

// goldenRows builds the rows exactly as TRL did: the real prompt and
// completion tokens of each golden row (masks applied) and its advantage.
func goldenRows(g goldenGRPO) []*row {
	rows := maskedRows(g.PromptIDs, g.PromptMask, g.CompletionIDs, g.CompletionMask)
	for i, r := range rows {
		r.Advantage = g.Advantages[i]
	}
	return rows
}

// maskedRows keeps each golden row's real prompt and completion tokens: the
// ones its masks mark (TRL pads prompts on the left, completions on the right).
func maskedRows(promptIDs, promptMask, completionIDs [][]int32, completionMask [][]float32) []*row {
	rows := make([]*row, len(promptIDs))
	for i := range rows {
		r := &row{}
		for j, id := range promptIDs[i] {
			if promptMask[i][j] == 1 {
				r.PromptIDs = append(r.PromptIDs, id)
			}
		}
		for j, id := range completionIDs[i] {
			if completionMask[i][j] == 1 {
				r.IDs = append(r.IDs, id)
			}
		}
		rows[i] = r
	}
	return rows
}
