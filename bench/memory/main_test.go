package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMain runs the workload when the test binary is started as the
// child (run re-executes os.Executable).
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := child(os.Args[1:], os.Stdout); err != nil {
			os.Stderr.WriteString("memory child: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSmoke runs both workloads on a tiny config end to end: the folder
// is written, the child trains and prints the plan, and the parent
// reports a peak RSS and s/step.
func TestSmoke(t *testing.T) {
	dir := t.TempDir()
	cfg := map[string]any{
		"model_type": "llama", "vocab_size": 512, "hidden_size": 64, "intermediate_size": 128,
		"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
		"max_position_embeddings": 512, "rms_norm_eps": 1e-5, "rope_theta": 10000, "tie_word_embeddings": true,
		"hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16",
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "tiny.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`\| tiny \w+, [^|]+ \| ([\d.]+ [MG]B) \| ([\d.]+) ([MG])B \| [\d.]+ \| ([\d.]+) \|`)
	for _, args := range [][]string{
		{"-workload", "gsm8k", "-quantize", "nf4", "-prompt-tokens", "16", "-max-completion", "4"},
		{"-workload", "reference", "-steps", "1"},
	} {
		var out strings.Builder
		if err := run(append([]string{"-config", path, "-dir", filepath.Join(dir, "model")}, args...), &out); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
		got := out.String()
		m := row.FindStringSubmatch(got)
		if m == nil || !strings.Contains(got, "memory plan: llama") {
			t.Fatalf("%v: no plan or result row:\n%s", args, got)
		}
		// FormatBytes prints GB from 100 MB on; a tiny run peaks near it.
		if rss, _ := strconv.ParseFloat(m[2], 64); m[3] == "M" && rss < 10 {
			t.Errorf("%v: peak RSS %s MB", args, m[2])
		}
	}
}
