package lora_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/model"
)

// Attach a rank-4 adapter to the attention projections of a tiny model, save
// it in PEFT's layout (which Python's peft can load).
func ExampleAttach() {
	cfg := model.Config{
		ModelType: "llama", VocabSize: 64, HiddenSize: 32, IntermediateSize: 64,
		NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2,
		MaxPositionEmbeddings: 128, RMSNormEps: 1e-5, RopeTheta: 10000,
		TieWordEmbeddings: true, HiddenAct: "silu", BOSTokenID: 1, EOSTokenIDs: []int{2},
	}
	m, err := model.New(cfg, 1, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := lora.Attach(m, lora.Config{R: 4, Alpha: 8, TargetModules: []string{"q_proj", "v_proj"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("scaling:", a.Config().Scaling())
	fmt.Println("adapted modules:", len(a.Modules()), "trainable tensors:", len(m.TrainableVariables()))

	dir, _ := os.MkdirTemp("", "adapter")
	defer os.RemoveAll(dir)
	if err := a.Save(dir); err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range []string{"adapter_config.json", "adapter_model.safetensors"} {
		_, err := os.Stat(filepath.Join(dir, f))
		fmt.Println(f, err == nil)
	}
	// Output:
	// scaling: 2
	// adapted modules: 4 trainable tensors: 8
	// adapter_config.json true
	// adapter_model.safetensors true
}
