package model

import (
	"math"
	"path/filepath"
	"slices"
	"testing"
)

// TestRealConfigs parses the config.json files of real checkpoints
// (testdata/configs, sources in its README), validates them, and checks the
// parameter count computed from each against the published count of the
// checkpoint (language model only, tied embeddings counted once).
func TestRealConfigs(t *testing.T) {
	for _, tc := range []struct {
		file      string
		modelType string
		params    int64
		// source of params; see testdata/configs/README.md.
		source  string
		sliding int // sliding-window layers
		window  int
		check   func(t *testing.T, c Config)
	}{
		{"Qwen3-0.6B.json", "qwen3", 596049920, "KerasHub qwen3_0.6b_en", 0, 0, func(t *testing.T, c Config) {
			if c.HeadDim != 128 || c.HiddenSize != 1024 || !c.TieWordEmbeddings || c.RopeTheta != 1e6 {
				t.Errorf("head_dim %d hidden %d tied %v rope_theta %g", c.HeadDim, c.HiddenSize, c.TieWordEmbeddings, c.RopeTheta)
			}
		}},
		{"Qwen3-1.7B.json", "qwen3", 1720574976, "KerasHub qwen3_1.7b_en", 0, 0, nil},
		{"gemma-3-270m.json", "gemma3_text", 268098176, "KerasHub gemma3_270m", 15, 512, nil},
		{"gemma-3-1b-it.json", "gemma3_text", 999885952, "KerasHub gemma3_instruct_1b", 22, 512, func(t *testing.T, c Config) {
			if !slices.Equal(c.EOSTokenIDs, []int{1, 106}) || c.BOSTokenID != 2 {
				t.Errorf("eos %v bos %d", c.EOSTokenIDs, c.BOSTokenID)
			}
		}},
		// The shapes of the memory workloads (bench/memory); counts from
		// the sources in testdata/configs/README.md.
		{"Qwen2.5-0.5B-Instruct.json", "qwen2", 494032768, "public GGUF and QLoRA fixtures", 0, 0, func(t *testing.T, c Config) {
			if c.HeadDim != 64 || !c.TieWordEmbeddings || c.NumKeyValueHeads != 2 || c.UseSlidingWindow {
				t.Errorf("head_dim %d tied %v kv heads %d sliding %v", c.HeadDim, c.TieWordEmbeddings, c.NumKeyValueHeads, c.UseSlidingWindow)
			}
		}},
		{"Llama-3.2-1B-Instruct.json", "llama", 1235814400, "GPTQModel's LLAMA_3_2_1B_PARAMETER_COUNT", 0, 0, func(t *testing.T, c Config) {
			if !c.TieWordEmbeddings || c.RopeScaling == nil || c.RopeScaling.Kind() != "llama3" || c.RopeScaling.Factor != 32 ||
				!slices.Equal(c.EOSTokenIDs, []int{128001, 128008, 128009}) {
				t.Errorf("tied %v rope_scaling %+v eos %v", c.TieWordEmbeddings, c.RopeScaling, c.EOSTokenIDs)
			}
		}},
		{"Llama-3.1-8B-Instruct.json", "llama", 8030261248, "Hub safetensors count in an Unsloth Studio scene", 0, 0, func(t *testing.T, c Config) {
			if c.TieWordEmbeddings || c.HeadDim != 128 || c.RopeScaling == nil || c.RopeScaling.Factor != 8 {
				t.Errorf("tied %v head_dim %d rope_scaling %+v", c.TieWordEmbeddings, c.HeadDim, c.RopeScaling)
			}
		}},
		{"SmolLM2-135M.json", "llama", 134515008, "public Rust test and breakdown", 0, 0, func(t *testing.T, c Config) {
			if c.HeadDim != 64 || c.NumKeyValueHeads != 3 || !c.TieWordEmbeddings || c.RopeTheta != 1e5 {
				t.Errorf("head_dim %d kv heads %d tied %v rope_theta %g", c.HeadDim, c.NumKeyValueHeads, c.TieWordEmbeddings, c.RopeTheta)
			}
		}},
		// KerasHub's gemma3_instruct_4b_text (3,880,099,328) has a 262,144-row
		// embedding; the HF checkpoint's has 262,208 rows: + 64 × 2560.
		{"gemma-3-4b-it.json", "gemma3", 3880099328 + 64*2560, "KerasHub gemma3_instruct_4b_text + 64 rows", 29, 1024, func(t *testing.T, c Config) {
			// Everything but six keys comes from Gemma3TextConfig's defaults.
			if c.VocabSize != 262208 || c.NumAttentionHeads != 8 || c.NumKeyValueHeads != 4 || c.HeadDim != 256 ||
				c.QueryPreAttnScalar != 256 || c.RMSNormEps != 1e-6 || c.RopeLocalBaseFreq != 1e4 || c.RopeTheta != 1e6 ||
				!c.TieWordEmbeddings || c.HiddenActivation != "gelu_pytorch_tanh" {
				t.Errorf("defaults not filled in: %+v", c)
			}
			if c.RopeScaling == nil || c.RopeScaling.Kind() != "linear" || c.RopeScaling.Factor != 8 {
				t.Errorf("rope_scaling %+v", c.RopeScaling)
			}
			// Linear scaling divides the full layers' frequencies only.
			if full, local := c.LayerInvFreq(5), c.LayerInvFreq(0); full[1] != 1/(8*pow(1e6, 2.0/256)) || local[1] != 1/pow(1e4, 2.0/256) {
				t.Errorf("inv_freq[1]: full %g local %g", full[1], local[1])
			}
			if !slices.Equal(c.EOSTokenIDs, []int{1, 106}) {
				t.Errorf("eos %v (want the top level's)", c.EOSTokenIDs)
			}
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			c, err := ReadConfig(filepath.Join("testdata", "configs", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if c.ModelType != tc.modelType {
				t.Errorf("model_type %q, want %q", c.ModelType, tc.modelType)
			}
			if got := c.NumParams(); got != tc.params {
				t.Errorf("NumParams = %d, want %d (%s)", got, tc.params, tc.source)
			}
			n := 0
			for i := range c.NumHiddenLayers {
				if c.IsSlidingLayer(i) {
					n++
					if (i+1)%6 == 0 {
						t.Errorf("layer %d is sliding; every 6th layer is full", i)
					}
				}
			}
			if n != tc.sliding || (n > 0 && c.SlidingWindow != tc.window) {
				t.Errorf("%d sliding layers with window %d, want %d with %d", n, c.SlidingWindow, tc.sliding, tc.window)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

func pow(x, y float64) float64 { return math.Pow(x, y) }
