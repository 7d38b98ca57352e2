package grpo_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/grpo"
)

func TestDecodeConfig(t *testing.T) {
	c, err := grpo.DecodeConfig([]byte(`{"num_generations": 4, "per_device_train_batch_size": 8, "max_steps": 3, "learning_rate": 1e-5}`))
	if err != nil {
		t.Fatal(err)
	}
	def := grpo.DefaultConfig()
	if c.NumGenerations != 4 || c.BatchSize != 8 || c.MaxSteps != 3 || c.LearningRate != 1e-5 || c.Epsilon != def.Epsilon {
		t.Errorf("decoded %+v", c)
	}
	for in, want := range map[string]string{
		`{"num_generation": 4}`:                       `unknown key "num_generation" (did you mean "num_generations"?)`,
		`{"lr": 1}`:                                   `unknown key "lr"`,
		`{"num_generations": 3}`:                      "must be a multiple of NumGenerations",
		`{"max_steps": 1, "lerning_rate": 1, "x": 2}`: `(did you mean "learning_rate"?)`,
	} {
		if _, err := grpo.DecodeConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("num_generations: 2\nper_device_train_batch_size: 4\nbeta: 0.04\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := grpo.LoadConfig(path); err != nil || c.Beta != 0.04 || c.NumGenerations != 2 {
		t.Errorf("LoadConfig YAML: %+v, %v", c, err)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.WriteFile(path, []byte("output_dir: ~/runs/a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := grpo.LoadConfig(path); err != nil || c.OutputDir != filepath.Join(home, "runs", "a") {
		t.Errorf("LoadConfig output_dir: %q, %v; want ~ expanded", c.OutputDir, err)
	}
}
