package grpo

import (
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/loss"
)

// graphFacts are what TestActivationMemoryGraph reads from a training graph.
type graphFacts struct {
	widestLogits int // largest n of a [B, n, V] node anywhere in the graph
	keptLogits   int // forward [B, n, V] nodes that the backward pass reads
	keptMLP      int // forward [B, T, intermediate] nodes that the backward pass reads
}

// trainGraphFacts builds the golden llama-tiny GRPO loss and its LoRA
// gradients as the trainer does, with the given chunk size and
// checkpointing, and inspects the graph (nothing is run).
func trainGraphFacts(t *testing.T, chunk int, checkpoint bool) graphFacts {
	t.Helper()
	g, _ := loadGoldenGRPO(t, "llama-tiny")
	pol := goldenLoRAPolicy(t, nil)
	cfg := pol.Model().Config()
	vars := pol.TrainableVariables()
	rows := goldenRows(g)
	mb := packRowsShape(rows, len(rows), 5, g.MaxCompletionLength, false)
	mb.setWeights(loss.DAPO, loss.StepNormalizers{Rows: len(rows), Tokens: mb.tokens(), MicroBatch: 1, MaxCompletionLength: g.MaxCompletionLength})
	var facts graphFacts
	exec, err := mlctx.NewExecAny(pol.Backend(), pol.Context(), func(ctx *mlctx.Context, in []*Node) []*Node {
		ctx = ctx.Checked(false)
		b, l := in[0].Shape().Dim(0), in[0].Shape().Dim(1)
		logp, ent := PolicyLogProbs(ctx, pol, in[0], in[1], in[2].Shape().Dim(1), LogProbsOptions{Temperature: 1, ChunkSize: chunk, GradientCheckpointing: checkpoint})
		terms := loss.TokenLoss(loss.Inputs{LogP: logp, Adv: in[4], Mask: in[2], Entropy: ent}, loss.Spec{Epsilon: 0.2, EpsilonHigh: 0.2})
		loss := loss.WeightedLoss(terms.PerToken, in[3])
		values := make([]*Node, len(vars))
		for i, v := range vars {
			values[i] = v.ValueGraph(loss.Graph())
		}
		grads := Gradient(loss, values...)
		last := loss.Id()
		readLate := map[NodeId]bool{} // nodes read by a node made after the loss
		for _, n := range loss.Graph().Nodes() {
			if n.Id() > last {
				for _, x := range n.Inputs() {
					readLate[x.Id()] = true
				}
			}
		}
		for _, n := range loss.Graph().Nodes() {
			d := n.Shape().Dimensions
			if len(d) != 3 || d[0] != b {
				continue
			}
			if d[2] == cfg.VocabSize {
				facts.widestLogits = max(facts.widestLogits, d[1])
				if n.Id() < last && readLate[n.Id()] {
					facts.keptLogits++
				}
			}
			if d[1] == l && d[2] == cfg.IntermediateSize && n.Id() < last && readLate[n.Id()] {
				facts.keptMLP++
			}
		}
		return append([]*Node{loss}, grads...)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.Exec(mb.inputs(false, false)...); err != nil {
		t.Fatal(err)
	}
	return facts
}

// TestActivationMemoryGraph checks, on the graph itself, that the chunked
// log-probs never build the [B, C, V] logits (the widest logits node is
// one chunk) and keep no logits for the backward pass, and that gradient
// checkpointing keeps no MLP activation for it; the whole-logits and
// non-checkpointed builds show that the inspection sees both.
func TestActivationMemoryGraph(t *testing.T) {
	c := 8 // the golden completions' length
	for _, tc := range []struct {
		name       string
		chunk      int
		checkpoint bool
		widest     int
		mlpKept    bool
	}{
		{"one chunk", c, false, c, true},
		{"chunks of 3", 3, false, 3, true},
		{"chunks of 3, checkpointed layers", 3, true, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := trainGraphFacts(t, tc.chunk, tc.checkpoint)
			if f.widestLogits != tc.widest {
				t.Errorf("widest logits node has %d positions, want %d", f.widestLogits, tc.widest)
			}
			if f.keptLogits != 0 {
				t.Errorf("%d forward logits nodes are read by the backward pass, want 0 (chunks are recomputed)", f.keptLogits)
			}
			if (f.keptMLP > 0) != tc.mlpKept {
				t.Errorf("%d forward MLP activations read by the backward pass; want some: %v", f.keptMLP, tc.mlpKept)
			}
		})
	}
}
