package sft_test

import (
	"strings"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/grpo/grpotest"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/sft"
)

var words = []string{"say", "cat", "dog", "fish", "bird"}

// sayDataset asks for one of four words: "say cat" → "cat".
func sayDataset() dataset.SliceDataset {
	var d dataset.SliceDataset
	for _, w := range words[1:] {
		d = append(d, dataset.Example{Prompt: "say " + w, Answer: w})
	}
	return d
}

// smallConfig is the settings of the tests' tiny steps.
func smallConfig(t *testing.T) sft.Config {
	cfg := sft.DefaultConfig()
	cfg.BatchSize, cfg.MaxCompletionLength, cfg.MaxPromptLength = 8, 3, 8
	cfg.LearningRate, cfg.LRSchedulerType = 0.1, grpo.ScheduleConstant
	return cfg
}

func newPolicy(t *testing.T) *grpotest.Policy {
	t.Helper()
	p, err := grpotest.NewPolicy(words, 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var nameWords = []string{"cat", "dog", "fish", "bird", "frog", "bear", "wolf", "duck"}

// named scores 1 when the completion is the word the prompt names.
var named = reward.Func(func(_, completion, answer string) float64 {
	if strings.TrimSpace(completion) == answer {
		return 1
	}
	return 0
})
