package model_test

import (
	"context"
	"fmt"

	"github.com/grpokit/grpokit/model"
)

// A tiny model built from scratch generates a constrained answer: only one
// of the labels, followed by EOS, can come out.
func ExampleModel_Generate() {
	cfg := model.Config{
		ModelType: "llama", VocabSize: 64, HiddenSize: 32, IntermediateSize: 64,
		NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2,
		MaxPositionEmbeddings: 128, RMSNormEps: 1e-5, RopeTheta: 10000,
		TieWordEmbeddings: true, HiddenAct: "silu", BOSTokenID: 1, EOSTokenIDs: []int{2},
	}
	m, err := model.New(cfg, 7, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	labels := [][]int{{10, 11}, {12}, {13, 14, 15}}
	out, err := m.Generate(context.Background(), [][]int{{1, 5, 6, 7}}, model.GenerateConfig{
		MaxNewTokens: 8, NumGenerations: 3, Sampling: model.Sampling{Temperature: 1}, Seed: 1,
		Constraint: model.NewTrie(labels, 2),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range out {
		fmt.Println(c.Stopped, c.Tokens[len(c.Tokens)-1])
	}
	// Output:
	// true 2
	// true 2
	// true 2
}

// Loading a Hugging Face checkpoint and scoring tokens.
func ExampleLoad() {
	m, err := model.Load("path/to/SmolLM2-135M", nil)
	if err != nil {
		fmt.Println("load failed:", err != nil)
		return
	}
	lp, err := m.TokenLogProbs(model.LeftPad([][]int{{1, 2, 3}}, 0, 0))
	fmt.Println(lp, err)
	// Output: load failed: true
}
