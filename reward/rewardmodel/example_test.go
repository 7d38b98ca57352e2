package rewardmodel_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/reward/rewardmodel"
	"github.com/grpokit/grpokit/tokenizer"
)

// A reward model scores a batch of samples: a conversational one through
// its chat template, a plain one as prompt + completion. (The folder here
// is a tiny random Qwen3 reward model with a byte-level tokenizer; a real
// one is a Hugging Face …ForSequenceClassification folder.)
func Example() {
	dir, err := os.MkdirTemp("", "rm-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, f := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join("testdata", "qwen3-seqcls", f))
		if err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if err := tokenizer.WriteTinyDir(dir, nil); err != nil {
		log.Fatal(err)
	}

	rm, err := rewardmodel.Load(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	samples := []reward.Sample{
		{Prompt: "What is 2+2?", Completion: " 4"},
		{Messages: []reward.Message{{Role: "user", Content: "yes?"}}, Completion: "no"},
	}
	scores, err := rm.ScoreBatch(context.Background(), samples)
	if err != nil {
		log.Fatal(err)
	}
	text, _ := rm.Text(samples[1])
	fmt.Printf("%.2f %.2f\n%q\n", scores[0], scores[1], text)
	// Output:
	// 1.68 0.09
	// "<|im_start|>user\nyes?<|im_end|>\n<|im_start|>assistant\nno<|im_end|>\n"
}
