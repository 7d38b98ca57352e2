package model

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteRandomHF writes tiny Qwen3 and Gemma 3 folders, loads them back
// and checks shapes, the bf16 rounding and the norm initialisation.
func TestWriteRandomHF(t *testing.T) {
	for _, tc := range []struct {
		cfg      Config
		normWant float32
	}{
		{Config{ModelType: "qwen3", VocabSize: 96, HiddenSize: 32, IntermediateSize: 48, NumHiddenLayers: 2,
			NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16, MaxPositionEmbeddings: 64, RMSNormEps: 1e-6,
			RopeTheta: 1e6, TieWordEmbeddings: true, HiddenAct: "silu", BOSTokenID: 1, EOSTokenIDs: []int{2}}, 1},
		{Config{ModelType: "gemma3_text", VocabSize: 96, HiddenSize: 32, IntermediateSize: 48, NumHiddenLayers: 3,
			NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 16, MaxPositionEmbeddings: 64, RMSNormEps: 1e-6,
			RopeTheta: 1e6, RopeLocalBaseFreq: 1e4, QueryPreAttnScalar: 16, SlidingWindow: 4, SlidingWindowPattern: 3,
			TieWordEmbeddings: true, HiddenActivation: "gelu_pytorch_tanh", BOSTokenID: 2, EOSTokenIDs: []int{1}}, 0},
	} {
		t.Run(tc.cfg.ModelType, func(t *testing.T) {
			dir := t.TempDir()
			if err := WriteRandomHF(dir, tc.cfg, 7, "bf16"); err != nil {
				t.Fatal(err)
			}
			if c, err := ReadConfig(filepath.Join(dir, "config.json")); err != nil || c.TorchDType != "bfloat16" {
				t.Errorf("config.json torch_dtype %q (%v), want bfloat16 as the weights", c.TorchDType, err)
			}
			m, err := Load(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := m.NumParams(), int(tc.cfg.withDefaults().NumParams()); got != want {
				t.Errorf("NumParams %d, want %d", got, want)
			}
			norm, _, err := m.Weight("model.layers.0.input_layernorm.weight")
			if err != nil {
				t.Fatal(err)
			}
			if norm[0] != tc.normWant {
				t.Errorf("norm weight %v, want %v", norm[0], tc.normWant)
			}
			w, _, err := m.Weight("model.layers.1.mlp.up_proj.weight")
			if err != nil {
				t.Fatal(err)
			}
			var ss float64
			for _, v := range w {
				if math.Float32bits(v)&0xffff != 0 {
					t.Fatalf("value %v is not a bf16", v)
				}
				ss += float64(v) * float64(v)
			}
			if std := math.Sqrt(ss / float64(len(w))); std < 0.015 || std > 0.025 {
				t.Errorf("std %.4f, want ≈ 0.02", std)
			}
			if _, err := m.Logits(LeftPad([][]int{{1, 5, 9}}, 0, 4)); err != nil {
				t.Fatal(err)
			}
			// Nothing but the two files is left behind (atomic writes).
			ents, _ := os.ReadDir(dir)
			if len(ents) != 2 {
				t.Errorf("folder holds %d entries, want config.json and model.safetensors", len(ents))
			}
			if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
				t.Error(err)
			}
		})
	}
	if err := WriteRandomHF(t.TempDir(), Config{ModelType: "qwen3"}, 1, "f16"); err == nil {
		t.Error("bad dtype and config accepted")
	}
}
