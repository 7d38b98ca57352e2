package model

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGemma3ConfigErrors checks that Gemma 3 settings this package does not
// implement, or that contradict each other, are refused with a clear error.
func TestGemma3ConfigErrors(t *testing.T) {
	base, err := os.ReadFile(filepath.Join(sharedDir(t), "golden", "gemma3-tiny", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, old, new, want string
		unsupported          bool
	}{
		{"softcapping", `"final_logit_softcapping": null`, `"final_logit_softcapping": 30.0`, "logit soft-capping", true},
		{"exact gelu", `"gelu_pytorch_tanh"`, `"gelu"`, `hidden_activation "gelu"`, true},
		{"layer_types length", `"sliding_attention",
    "full_attention"`, `"full_attention"`, "layer_types has 3 entries for 4 layers", false},
		{"layer type name", `"full_attention"`, `"global"`, `layer_types[3] = "global"`, false},
		{"bidirectional", `"use_bidirectional_attention": false`, `"use_bidirectional_attention": true`, "EmbeddingGemma", true},
		{"no window", `"sliding_window": 4`, `"sliding_window": 0`, "sliding_window = 0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := strings.Replace(string(base), tc.old, tc.new, 1)
			if js == string(base) {
				t.Fatalf("edit %q not applied", tc.old)
			}
			_, err := ParseConfig([]byte(js))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if got := errors.Is(err, ErrUnsupportedArch); got != tc.unsupported {
				t.Errorf("errors.Is(err, ErrUnsupportedArch) = %v, want %v", got, tc.unsupported)
			}
		})
	}
	// A multimodal config without text_config.
	if _, err := ParseConfig([]byte(`{"model_type": "gemma3"}`)); err == nil || !strings.Contains(err.Error(), "text_config") {
		t.Errorf("gemma3 without text_config: %v", err)
	}
}

// TestPatternGivesLayerTypes checks sliding_window_pattern (and its
// absence: 6) against layer_types, the two forms real configs use.
func TestPatternGivesLayerTypes(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		full    []int
	}{
		{`"sliding_window_pattern": 2,`, []int{1, 3, 5, 7}},
		{`"_sliding_window_pattern": 4,`, []int{3, 7}},
		{``, []int{5}},
	} {
		js := `{"model_type": "gemma3_text", "num_hidden_layers": 8, "hidden_size": 64, "intermediate_size": 96,
			"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "vocab_size": 32, ` + tc.pattern + ` "sliding_window": 8}`
		c, err := ParseConfig([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		var full []int
		for i := range c.NumHiddenLayers {
			if !c.IsSlidingLayer(i) {
				full = append(full, i)
			}
		}
		if !slices.Equal(full, tc.full) {
			t.Errorf("%s: full layers %v, want %v", tc.pattern, full, tc.full)
		}
	}
}

// TestMultimodalSaveRoundTrip saves a model loaded from the multimodal
// layout and loads it back as the text-only gemma3_text it is written as.
func TestMultimodalSaveRoundTrip(t *testing.T) {
	g := loadGolden(t, "gemma3-mm-tiny")
	var log strings.Builder
	m, err := Load(g.dir, &Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(log.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "vision tower") {
		t.Errorf("%d log lines, want one about the skipped vision tower", len(lines))
	}
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m2.Config().ModelType != "gemma3_text" || !slices.Equal(m2.Config().LayerTypes, m.Config().LayerTypes) {
		t.Errorf("saved as %q with layer_types %v", m2.Config().ModelType, m2.Config().LayerTypes)
	}
	want := g.tensors["logits"]
	got, err := m2.Logits(g.batch())
	if err != nil {
		t.Fatal(err)
	}
	checkClose(t, "logits after save", got, want.Data, g.JSON.AttentionMask, want.Shape[2], 2e-4, 2e-4)
}

// TestConfigDType reads the checkpoint's dtype under both of transformers'
// names: torch_dtype, and dtype (written since transformers 4.56), also at
// the top of a multimodal config whose text_config lacks it.
func TestConfigDType(t *testing.T) {
	const dims = `"num_hidden_layers": 1, "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 2,
		"num_key_value_heads": 1, "head_dim": 32, "vocab_size": 32`
	for _, tc := range []struct{ js, want string }{
		{`{"model_type": "qwen3", "torch_dtype": "bfloat16", ` + dims + `}`, "bfloat16"},
		{`{"model_type": "qwen3", "dtype": "bfloat16", ` + dims + `}`, "bfloat16"},
		{`{"model_type": "qwen3", "torch_dtype": "float32", "dtype": "bfloat16", ` + dims + `}`, "float32"},
		{`{"model_type": "qwen3", ` + dims + `}`, ""},
		{`{"model_type": "gemma3", "dtype": "bfloat16", "text_config": {"model_type": "gemma3_text", ` + dims + `}}`, "bfloat16"},
	} {
		c, err := ParseConfig([]byte(tc.js))
		if err != nil {
			t.Fatal(err)
		}
		if c.TorchDType != tc.want {
			t.Errorf("%s: torch dtype %q, want %q", tc.js, c.TorchDType, tc.want)
		}
	}
}
