package grpo_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/agent"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/tokenizer"
)

// toolLM is a tiny LMPolicy whose Generate writes each turn from a seeded
// coin instead of sampling: a calculator call, or a number (the right
// product after a result, a wrong one otherwise half the time). Its
// trajectories have tool tokens whatever its weights, while log-probs,
// gradients, updates and checkpoints are the real model's.
type toolLM struct {
	*grpo.LMPolicy
	tok *tokenizer.Pretrained
}

func (p toolLM) Generate(ctx context.Context, prompts []dataset.Example, n int, opts grpo.GenerateOptions) ([]grpo.Completion, error) {
	var out []grpo.Completion
	for i, ex := range prompts {
		seq := p.tok.Tokenizer.Decode(ex.PromptIDs, false)
		for j := range n {
			rng := rand.New(rand.NewPCG(opts.Seed, uint64(i*n+j)))
			var text string
			switch k := strings.LastIndex(seq, "<result>"); {
			case k >= 0 && strings.HasSuffix(seq, "</result>"):
				text = seq[k+len("<result>") : len(seq)-len("</result>")]
				if rng.IntN(4) == 0 {
					text += "1"
				}
			case rng.IntN(2) == 0:
				text = "<call>calculator 6*7</call>"
			default:
				text = []string{"42", "41", "<call>nope</call>"}[rng.IntN(3)]
			}
			ids := p.tok.Tokenizer.Encode(text, false)
			c := grpo.Completion{}
			for _, id := range ex.PromptIDs {
				c.PromptIDs = append(c.PromptIDs, int32(id))
			}
			for _, id := range ids {
				c.IDs = append(c.IDs, int32(id))
			}
			if len(c.IDs) >= opts.MaxCompletionLength {
				c.IDs, c.Truncated = c.IDs[:opts.MaxCompletionLength], true
			} else {
				c.IDs = append(c.IDs, int32(p.tok.EOS[0]))
			}
			c.Text = text
			out = append(out, c)
		}
	}
	return out, nil
}

func newToolLM(t *testing.T) toolLM {
	t.Helper()
	m, tok, err := model.NewTiny(t.TempDir(), []string{"<call", "call", "</", ">", "<result", "result", "calculator"},
		model.TinyConfig{Hidden: 16, Layers: 1, Heads: 2}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := grpo.NewLMPolicy(m, nil, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	return toolLM{LMPolicy: p, tok: tok}
}

func toolConfig(t *testing.T) grpo.Config {
	cfg := grpo.DefaultConfig()
	cfg.NumGenerations = 4
	cfg.BatchSize = 8
	cfg.MaxCompletionLength = 40
	cfg.MaxToolCallingIterations = 2
	cfg.LearningRate = 0.01
	cfg.LRSchedulerType = grpo.ScheduleConstant
	cfg.MaxSteps = 4
	cfg.LoggingSteps = 0
	cfg.SaveSteps = 0
	cfg.Beta = 0.04
	cfg.NumIterations = 2
	cfg.OutputDir = t.TempDir()
	return cfg
}

var product = reward.ScorerFunc(func(s reward.Sample) float64 {
	if strings.TrimSpace(s.Final()) == s.Answer {
		return 1
	}
	return 0
})

func toolData() dataset.SliceDataset {
	return dataset.SliceDataset{{Prompt: "Q:6*7=", Answer: "42"}, {Prompt: "Q:7*6=", Answer: "42"}}
}

func trainTools(t *testing.T, cfg grpo.Config, resume bool, cancelAt int) (toolLM, []grpo.Metrics, error) {
	t.Helper()
	p := newToolLM(t)
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "product", Weight: 1, Scorer: product})
	if err != nil {
		t.Fatal(err)
	}
	r, err := agent.NewRenderer(p.tok, agent.RendererOptions{Format: agent.Plain{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.SetTools(grpo.Tools{Tools: []*agent.Tool{agent.Calculator()}, Renderer: r}); err != nil {
		t.Fatal(err)
	}
	if resume {
		path, err := grpo.LatestCheckpoint(cfg.OutputDir)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Resume(path); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ms []grpo.Metrics
	tr.OnStep = func(m grpo.Metrics) {
		ms = append(ms, m)
		if int(m["step"]) == cancelAt {
			cancel()
		}
	}
	return p, ms, tr.Train(ctx, toolData())
}

func TestToolsTrainMetrics(t *testing.T) {
	_, ms, err := trainTools(t, toolConfig(t), false, -1)
	if err != nil {
		t.Fatal(err)
	}
	m := ms[0]
	if !(m["tools/call_frequency"] > 0) || !(m["tools/failure_frequency"] > 0) || !(m["tools/failure_frequency"] < 1) || !(m["tools/turns_per_trajectory"] > 1) {
		t.Errorf("tool metrics %v %v %v", m["tools/call_frequency"], m["tools/failure_frequency"], m["tools/turns_per_trajectory"])
	}
	for _, k := range []string{"loss", "kl", "grad_norm", "reward"} {
		if math.IsNaN(m[k]) || math.IsInf(m[k], 0) {
			t.Errorf("%s = %v", k, m[k])
		}
	}
}

// TestToolsResumeBitExact stops a run with tools after step 2 (between
// the two steps of one generation batch, NumIterations 2), resumes it and
// checks that the weights and metrics equal an uninterrupted run's.
func TestToolsResumeBitExact(t *testing.T) {
	cfg := toolConfig(t)
	want, wantMs, err := trainTools(t, cfg, false, -1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OutputDir = t.TempDir()
	if _, _, err := trainTools(t, cfg, false, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	if path, err := grpo.LatestCheckpoint(cfg.OutputDir); err != nil || filepath.Base(path) != "checkpoint-1" {
		t.Fatalf("latest checkpoint %q, %v", path, err)
	}
	got, gotMs, err := trainTools(t, cfg, true, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(gotMs) != 3 {
		t.Fatalf("resumed run took %d steps, want 3", len(gotMs))
	}
	wv, gv := want.TrainableVariables(), got.TrainableVariables()
	for i := range wv {
		a, b := weights(t, wv[i]), weights(t, gv[i])
		for j := range a {
			if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
				t.Fatalf("%s[%d] = %v after resume, %v uninterrupted", wv[i].Name(), j, b[j], a[j])
			}
		}
	}
	for i, m := range gotMs {
		w := wantMs[1+i]
		for _, k := range []string{"step", "loss", "reward", "grad_norm", "kl", "num_tokens", "tools/call_frequency", "tools/failure_frequency"} {
			if m[k] != w[k] {
				t.Errorf("step %v: %s = %v resumed, %v uninterrupted", w["step"], k, m[k], w[k])
			}
		}
	}
}

func weights(t *testing.T, v *mlctx.Variable) []float32 {
	t.Helper()
	x, err := v.Value()
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](x)
}

// SetTools refuses, before step 0, a template that cannot render tools
// and settings it cannot honour.
func TestSetToolsErrors(t *testing.T) {
	p := newToolLM(t)
	cfg := toolConfig(t)
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "product", Weight: 1, Scorer: product})
	if err != nil {
		t.Fatal(err)
	}
	// The tiny model's ChatML template has no tools: no format detected.
	err = tr.SetTools(grpo.Tools{Tools: []*agent.Tool{agent.Calculator()}})
	if err == nil || !strings.Contains(err.Error(), "no tool-call format grpokit knows") {
		t.Errorf("SetTools with a template without tools: %v", err)
	}
	err = tr.SetTools(grpo.Tools{Tools: []*agent.Tool{agent.Calculator()}, Format: agent.Hermes{}})
	if err == nil || !strings.Contains(err.Error(), "drops the assistant's tool call") {
		t.Errorf("SetTools with Hermes on a template without tools: %v", err)
	}
	err = tr.SetTools(grpo.Tools{Format: agent.Plain{}})
	if err == nil || !strings.Contains(err.Error(), "no tools") {
		t.Errorf("SetTools without tools: %v", err)
	}
	cfg.EvalStrategy, cfg.EvalSteps = grpo.EvalByStep, 1
	tr, err = grpo.NewTrainer(p, cfg, reward.Named{Name: "product", Weight: 1, Scorer: product})
	if err != nil {
		t.Fatal(err)
	}
	err = tr.SetTools(grpo.Tools{Tools: []*agent.Tool{agent.Calculator()}, Format: agent.Plain{}})
	if err == nil || !strings.Contains(err.Error(), "eval_strategy") {
		t.Errorf("SetTools with eval_strategy steps: %v", err)
	}
}
