package model

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// llamaTinyConfig is the golden llama-tiny config.json as a map to edit.
func llamaTinyConfig(t *testing.T) (dir string, cfg map[string]any) {
	t.Helper()
	dir = sharedDir(t)
	data, err := os.ReadFile(filepath.Join(dir, "golden", "llama-tiny", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "golden", "llama-tiny"), cfg
}

// TestConfigHostileSizes checks that config.json values no real checkpoint
// has are refused by ParseConfig with an error naming the key. Before,
// head_dim 0, num_key_value_heads 0, an eos_token_id outside the
// vocabulary and max_position_embeddings 2^50 were accepted.
func TestConfigHostileSizes(t *testing.T) {
	cases := []struct {
		key  string
		val  any
		want string
	}{
		{"num_hidden_layers", 1e6, "num_hidden_layers = 1000000, more than 16384: the file is corrupt"},
		{"num_hidden_layers", 1e9, "num_hidden_layers = 1000000000, more than 16384: the file is corrupt"},
		{"head_dim", 0, "head_dim = 0, want > 0 (leave it out for hidden_size / num_attention_heads)"},
		{"num_key_value_heads", 0, "num_key_value_heads = 0, want > 0 (leave it out for num_attention_heads)"},
		{"eos_token_id", 512, "eos_token_id 512 is outside the vocabulary (vocab_size 512)"},
		{"eos_token_id", []int{2, -1}, "eos_token_id -1 is outside the vocabulary (vocab_size 512)"},
		{"bos_token_id", 100000, "bos_token_id 100000 is outside the vocabulary (vocab_size 512)"},
		{"max_position_embeddings", float64(1 << 50), "max_position_embeddings = 1125899906842624, more than 67108864: the file is corrupt"},
		{"vocab_size", 1e9, "vocab_size = 1000000000, more than 16777216"},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			_, cfg := llamaTinyConfig(t)
			cfg[tc.key] = tc.val
			data, _ := json.Marshal(cfg)
			_, err := ParseConfig(data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestLoadChecksHeaderFirst checks that Load compares config.json with the
// weights' header before building anything: a config with more layers than
// the weights hold is one clear error, quickly. Before, num_hidden_layers
// 1e6 made Load list a missing-weight error per layer until out of memory.
func TestLoadChecksHeaderFirst(t *testing.T) {
	src, cfg := llamaTinyConfig(t)
	cases := []struct {
		key  string
		val  any
		want string
	}{
		{"num_hidden_layers", 16000, "config.json has num_hidden_layers = 16000 but the weights hold 2 layers"},
		{"num_hidden_layers", 1e6, "num_hidden_layers = 1000000, more than 16384"},
		{"hidden_size", 128, "config.json has vocab_size = 512 and hidden_size = 128 but the weights' model.embed_tokens.weight is [512 64]"},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Symlink(filepath.Join(src, "model.safetensors"), filepath.Join(dir, "model.safetensors")); err != nil {
				t.Fatal(err)
			}
			c := map[string]any{}
			for k, v := range cfg {
				c[k] = v
			}
			c[tc.key] = tc.val
			data, _ := json.Marshal(c)
			if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err := Load(dir, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if len(err.Error()) > 1000 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
			t.Logf("%v (%v)", err, time.Since(start))
		})
	}
}
