package grpo_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
)

// ExampleTrainer trains a tiny model, built from scratch, to answer
// "say cat" with "cat": GRPO alone, full fine-tuning, answers constrained
// to the four animal names, in a few seconds on a CPU. It prints how many
// prompts greedy decoding answers right before and after.
func ExampleTrainer() {
	dir, err := os.MkdirTemp("", "grpo-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	animals := []string{"cat", "dog", "fish", "bird"}
	m, tok, err := model.NewTiny(dir, append([]string{"say"}, animals...), model.TinyConfig{Hidden: 32, Layers: 1}, 1, nil)
	if err != nil {
		log.Fatal(err)
	}
	var data dataset.SliceDataset
	var choices [][]int
	for _, a := range animals {
		data = append(data, dataset.Example{Prompt: "say " + a, Answer: a})
		choices = append(choices, tok.Tokenizer.Encode(a, false))
	}
	policy, err := grpo.NewLMPolicy(m, nil, tok, &grpo.LMPolicyOptions{
		Constraint: model.NewTrie(choices, tok.EOS[0]), NoSpecialTokens: true})
	if err != nil {
		log.Fatal(err)
	}
	said := reward.Func(func(_, completion, answer string) float64 {
		if strings.TrimSpace(completion) == answer {
			return 1
		}
		return 0
	})
	rewards := []reward.Named{{Name: "said", Weight: 1, Scorer: said}}
	correct := func() int {
		res, err := grpo.Evaluate(context.Background(), policy, data, rewards, grpo.EvalOptions{MaxCompletionLength: 3})
		if err != nil {
			log.Fatal(err)
		}
		return int(res.Reward*float64(len(data)) + 0.5)
	}
	before := correct()

	cfg := grpo.DefaultConfig()
	cfg.NumGenerations, cfg.BatchSize = 8, 32 // all four prompts, 8 answers each
	cfg.MaxSteps, cfg.MaxCompletionLength = 30, 3
	cfg.LearningRate, cfg.WarmupSteps = 3e-3, 2
	cfg.LoggingSteps, cfg.Seed = 0, 1
	tr, err := grpo.NewTrainer(policy, cfg, rewards...)
	if err != nil {
		log.Fatal(err)
	}
	if err := tr.Train(context.Background(), data); err != nil {
		log.Fatal(err)
	}
	after := correct()
	fmt.Printf("before: %d of 4\n", before)
	fmt.Printf("after %d steps: %d of 4\n", tr.Step(), after)
	// Output:
	// before: 0 of 4
	// after 30 steps: 4 of 4
}
