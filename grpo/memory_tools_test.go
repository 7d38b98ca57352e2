package grpo_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/agent"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/sharedtest"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/tokenizer"
)

// TestToolRunMemoryPlan: the memory plan of a tool-calling run (SetTools)
// sizes its rows as trajectories start, with the prompt rendered through
// the Qwen3 chat template with the calculator's schema declared (what
// agent.Renderer.PromptIDs gives, far longer than the bare prompt), and
// its KV cache for the longest context a turn can have; a run without
// tools plans the bare prompt. The plan is printed before step 0 (a 1 MB
// budget stops the run there).
func TestToolRunMemoryPlan(t *testing.T) {
	dir := t.TempDir()
	sharedtest.WriteTokenizer(t, dir, "qwen3")
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := dataset.SliceDataset{{Prompt: "What is 123 * 45? Use the calculator, then reply with the number only.", Answer: "5535"}}
	msgs := []tokenizer.Message{{Role: "user", Content: data[0].Prompt}}
	r, err := agent.NewRenderer(tok, agent.RendererOptions{})
	if err != nil {
		t.Fatal(err)
	}
	withTools, err := r.PromptIDs(agent.Prompt{Messages: msgs}, []*agent.Tool{agent.Calculator()})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := r.PromptIDs(agent.Prompt{Messages: msgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The KV cache's slots follow from the prompt length by hand: a
	// prompt of 162–256 tokens is bucketed to 256; some turn's context
	// (prompt + earlier turns, with the 96-token room left) passes 256,
	// is bucketed to 512, and with its room to 768 slots. The bare
	// prompt (the policy's own encoding without tools), 17–32 tokens, is
	// bucketed to 32: one turn, 32 + 96 = 128.
	if n := len(withTools); n < 162 || n > 256 || len(bare) > 32 {
		t.Fatalf("prompt with tools %d tokens, bare %d: the slots below assume 162–256 and 17–32", n, len(bare))
	}
	shape := model.Config{
		ModelType: "qwen3", VocabSize: tok.Tokenizer.VocabSize(), HiddenSize: 16, IntermediateSize: 32,
		NumHiddenLayers: 1, NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 8, MaxPositionEmbeddings: 1024,
		RMSNormEps: 1e-6, RopeTheta: 10000, TieWordEmbeddings: true, HiddenAct: "silu", BOSTokenID: -1, EOSTokenIDs: tok.EOS,
	}
	for _, tc := range []struct {
		tools          bool
		prompt, slots  int
		trajectoryNote bool
	}{
		{true, len(withTools), 768, true},
		{false, 0, 128, false}, // the prompt as the policy encodes it
	} {
		t.Run(fmt.Sprintf("tools=%v", tc.tools), func(t *testing.T) {
			m, err := model.New(shape, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			p, err := grpo.NewLMPolicy(m, nil, tok, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.prompt == 0 {
				ids, err := p.PromptIDs(data[0], 0)
				if err != nil {
					t.Fatal(err)
				}
				if n := len(ids); n < 17 || n > 32 {
					t.Fatalf("bare prompt %d tokens: the slots assume 17–32", n)
				}
				tc.prompt = len(ids)
			}
			cfg := grpo.DefaultConfig()
			cfg.NumGenerations, cfg.BatchSize, cfg.MaxSteps = 4, 4, 1
			cfg.MaxCompletionLength, cfg.MaxToolCallingIterations = 96, 2
			cfg.LoggingSteps, cfg.SaveSteps = 0, 0
			cfg.OutputDir = filepath.Join(t.TempDir(), "out")
			tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "one", Weight: 1, Scorer: reward.Func(func(_, _, _ string) float64 { return 1 })})
			if err != nil {
				t.Fatal(err)
			}
			if tc.tools {
				if err := tr.SetTools(grpo.Tools{Tools: []*agent.Tool{agent.Calculator()}}); err != nil {
					t.Fatal(err)
				}
			}
			budget, err := memplan.ParseLimit("1MB", "test")
			if err != nil {
				t.Fatal(err)
			}
			tr.Memory = &budget
			var out strings.Builder
			tr.Progress = &out
			var oom *memplan.OutOfMemoryError
			if err := tr.Train(context.Background(), data); !errors.As(err, &oom) {
				t.Fatalf("error %v, want *OutOfMemoryError", err)
			}
			for _, want := range []string{
				fmt.Sprintf("4 rows × (%d prompt + 96 completion) tokens", tc.prompt),
				fmt.Sprintf("4 rows × %d slots", tc.slots),
			} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("plan lacks %q:\n%s", want, out.String())
				}
			}
			if got := strings.Contains(out.String(), "the longest turn's context"); got != tc.trajectoryNote {
				t.Errorf("KV cache sized for a turn's context: %v, want %v:\n%s", got, tc.trajectoryNote, out.String())
			}
		})
	}
}
