package grpo_test

import (
	"context"
	"errors"
	"log"
	"strings"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/tokenizer"
)

// ExampleTrainer_resume trains a LoRA adapter on a checkpoint the user
// brings, resuming from the last checkpoint when there is one. It is
// compiled, not run.
func ExampleTrainer_resume() {
	const dir = "SmolLM2-135M-Instruct" // a Hugging Face model folder
	m, err := model.Load(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		log.Fatal(err)
	}
	adapter, err := lora.Attach(m, lora.Config{R: 16, Alpha: 32})
	if err != nil {
		log.Fatal(err)
	}
	policy, err := grpo.NewLMPolicy(m, adapter, tok, nil)
	if err != nil {
		log.Fatal(err)
	}

	data := dataset.SliceDataset{
		{Messages: []dataset.Message{{Role: "user", Content: "What is 2+3? Answer with a number."}}, Answer: "5"},
		{Messages: []dataset.Message{{Role: "user", Content: "What is 7-4? Answer with a number."}}, Answer: "3"},
	}
	correct := reward.Func(func(_, completion, answer string) float64 {
		if strings.TrimSpace(completion) == answer {
			return 1
		}
		return 0
	})

	cfg := grpo.DefaultConfig()
	cfg.MaxSteps = 200
	cfg.MaxCompletionLength = 32
	cfg.LearningRate = 1e-5
	cfg.Beta = 0.04
	cfg.OutputDir = "runs/arith"
	tr, err := grpo.NewTrainer(policy, cfg, reward.Named{Name: "correct", Weight: 1, Scorer: correct})
	if err != nil {
		log.Fatal(err)
	}
	path, err := grpo.LatestCheckpoint(cfg.OutputDir)
	switch {
	case errors.Is(err, checkpoint.ErrNoCheckpoint): // a first run
	case err != nil:
		log.Fatal(err) // checkpoints exist but none can be read
	default:
		if err := tr.Resume(path); err != nil {
			log.Fatal(err)
		}
	}
	if err := tr.Train(context.Background(), data); err != nil {
		log.Fatal(err)
	}
}
