package grpo

import (
	"fmt"
	"path/filepath"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
)

// keptBytes builds the trainer's LoRA loss and gradients for a batch of
// rows × (p + c) tokens on a model of shape cfg and returns the bytes of
// the forward nodes the backward pass reads: what SimpleGo holds between
// the forward and the backward pass (it frees a buffer after its last
// use). Variables, parameters, constants and reshapes (which share their
// input's buffer) are not counted. The graph is built, never run.
func keptBytes(t *testing.T, cfg model.Config, targets []string, rows, p, c int, checkpoint bool) int64 {
	t.Helper()
	m, err := model.New(cfg, 1, &model.Options{Storage: model.StorageBF16})
	if err != nil {
		t.Fatal(err)
	}
	a, err := lora.Attach(m, lora.Config{R: 8, Alpha: 16, Seed: 1, TargetModules: targets})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := NewLMPolicy(m, a, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	vars := pol.TrainableVariables()
	rs := make([]*row, rows)
	for i := range rs {
		rs[i] = &row{PromptIDs: make([]int32, p), IDs: make([]int32, c), Advantage: 1}
		for j := range rs[i].PromptIDs {
			rs[i].PromptIDs[j] = int32(j % cfg.VocabSize)
		}
	}
	mb := packRowsShape(rs, rows, p, c, false)
	mb.setWeights(loss.DAPO, loss.StepNormalizers{Rows: rows, Tokens: mb.tokens(), MicroBatch: 1, MaxCompletionLength: c})
	var kept int64
	built := errBuilt{}
	exec, err := mlctx.NewExecAny(pol.Backend(), pol.Context(), func(ctx *mlctx.Context, in []*Node) []*Node {
		ctx = ctx.Checked(false)
		logp, ent := PolicyLogProbs(ctx, pol, in[0], in[1], in[2].Shape().Dim(1), LogProbsOptions{Temperature: 1, GradientCheckpointing: checkpoint})
		terms := loss.TokenLoss(loss.Inputs{LogP: logp, Adv: in[4], Mask: in[2], Entropy: StopGradient(ent)}, loss.Spec{Epsilon: 0.2, EpsilonHigh: 0.2})
		l := loss.WeightedLoss(terms.PerToken, in[3])
		values := make([]*Node, len(vars))
		for i, v := range vars {
			values[i] = v.ValueGraph(l.Graph())
		}
		Gradient(l, values...)
		last := l.Id()
		readLate := map[NodeId]bool{}
		for _, n := range l.Graph().Nodes() {
			if n.Id() > last {
				for _, x := range n.Inputs() {
					readLate[x.Id()] = true
				}
			}
		}
		for _, n := range l.Graph().Nodes() {
			switch n.Type() {
			case NodeTypeParameter, NodeTypeConstant, NodeTypeReshape:
				continue
			}
			if n.Id() < last && readLate[n.Id()] {
				kept += int64(n.Shape().Memory())
			}
		}
		panic(built)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.Exec(mb.inputs(false, false)...); err == nil {
		t.Fatal("the graph ran")
	}
	return kept
}

// errBuilt stops the graph function once the graph is inspected.
type errBuilt struct{}

func (errBuilt) Error() string { return "built" }

// TestLoRAActivationsKept holds the memory plan's activations of a LoRA
// step to what the training graph keeps for the backward pass, at the
// widths of four real models (their configs, with 2 and 4 layers and a
// small vocabulary so that the graph builds in seconds): the difference
// between 4 and 2 layers is two layers' kept activations, which the
// plan's per-layer count must match (within 1%: the graph keeps a few
// scalars more), without and with gradient checkpointing (where a layer
// keeps its input, [rows, tokens, hidden]), for q/v adapters and for
// every projection adapted. The rows are a trajectory batch's shape: a
// prompt bucketed to 224 tokens and 96 completion tokens.
func TestLoRAActivationsKept(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 24 training graphs at real widths")
	}
	const rows, p, c = 4, 224, 96
	all := []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
	for _, name := range []string{"Qwen3-0.6B", "SmolLM2-135M", "Llama-3.2-1B-Instruct", "gemma-3-270m"} {
		for _, targets := range [][]string{nil, all} {
			if targets != nil && (name == "SmolLM2-135M" || name == "Llama-3.2-1B-Instruct") {
				continue // the same family as Qwen3 for the extra targets
			}
			for _, ckpt := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/targets=%d/checkpointing=%v", name, len(targets), ckpt), func(t *testing.T) {
					cfg, err := model.ReadConfig(filepath.Join("..", "model", "testdata", "configs", name+".json"))
					if err != nil {
						t.Fatal(err)
					}
					cfg.VocabSize, cfg.BOSTokenID, cfg.EOSTokenIDs = 512, 1, []int{2}
					var kept, planned [2]int64
					for i, layers := range []int{2, 4} {
						cfg.NumHiddenLayers = layers
						if cfg.LayerTypes != nil {
							cfg.LayerTypes = []string{"full_attention", "full_attention", "full_attention", "full_attention"}[:layers]
						}
						kept[i] = keptBytes(t, cfg, targets, rows, p, c, ckpt)
						plan, err := memplan.Estimate(memplan.Request{Model: cfg, LoRARank: 8, LoRATargets: targets, PromptTokens: p,
							Train: memplan.Training{BatchSize: rows, MaxPromptLength: p, MaxCompletionLength: c, GradientCheckpointing: ckpt}})
						if err != nil {
							t.Fatal(err)
						}
						for _, it := range plan.Items {
							if it.Name == "activations" {
								planned[i] = it.Bytes
							}
						}
					}
					got, want := float64(kept[1]-kept[0]), float64(planned[1]-planned[0])
					if d := got/want - 1; d < -0.01 || d > 0.01 {
						t.Errorf("two layers keep %.1f MB, the plan counts %.1f MB (%+.1f%%)", got/1e6, want/1e6, 100*d)
					}
				})
			}
		}
	}
}
