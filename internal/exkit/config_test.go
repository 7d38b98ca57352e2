package exkit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/loss"
)

func TestGRPOConfig(t *testing.T) {
	c := Config{Steps: 30, Generations: 8, Prompts: 4, LR: 2e-4, Temperature: 0.7, Beta: 0.04, Seed: 9, Out: "runs/x"}
	gc := c.GRPO(5)
	if gc.NumGenerations != 8 || gc.BatchSize != 32 || gc.MaxSteps != 30 || gc.LearningRate != 2e-4 ||
		gc.Temperature != 0.7 || gc.Beta != 0.04 || gc.Seed != 9 || gc.OutputDir != "runs/x" ||
		gc.SaveSteps != 0 || gc.LoggingSteps != 5 {
		t.Errorf("GRPO(5) = %+v", gc)
	}
	if err := gc.Validate(); err != nil {
		t.Errorf("GRPO(5) does not validate: %v", err)
	}
	c.Quiet = true
	if gc := c.GRPO(5); gc.LoggingSteps != 0 {
		t.Errorf("quiet: LoggingSteps %d, want 0", gc.LoggingSteps)
	}
}

func TestOutput(t *testing.T) {
	var c Config
	if c.Output() != os.Stdout {
		t.Error("no Stdout: want os.Stdout")
	}
	var b bytes.Buffer
	c.Stdout = &b
	if c.Output() != &b {
		t.Error("Stdout set: want it")
	}
}

// TestGRPOSavesPeriodically (finding 7): the examples' trainer settings
// checkpoint every few minutes, not only at the end, so a kill -9 late in
// a run costs minutes; the newest two are kept.
func TestGRPOSavesPeriodically(t *testing.T) {
	c := Config{Generations: 4, Prompts: 2, Steps: 10, Temperature: 1, LR: 1e-5, Out: t.TempDir()}
	gc := c.GRPO(5)
	if gc.SaveMinutes != grpo.DefaultSaveMinutes || gc.SaveTotalLimit != 2 {
		t.Errorf("SaveMinutes %v, SaveTotalLimit %d; want %v and 2", gc.SaveMinutes, gc.SaveTotalLimit, grpo.DefaultSaveMinutes)
	}
	if err := gc.Validate(); err != nil {
		t.Error(err)
	}
}

// TestConfigFileTRLNames gives the trainer options of TRL 1.10 by their
// names in a -config file: they reach grpo.Config through GRPO, and a typo
// is an error naming the key.
func TestConfigFileTRLNames(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	doc := `{"max_steps": 3, "loss_type": "cispo", "epsilon_high": 5, "scale_rewards": false, "min_p": 0.1,
		"importance_sampling_level": "sequence", "delta": 1.5, "dynamic_sampling": true, "repetition_penalty": 1.1,
		"steps_per_generation": 3}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Config{Steps: 30, Generations: 4, Prompts: 2, LR: 1e-4, Temperature: 1, Out: dir}
	if err := Parse("test", &c, &c, nil, []string{"-config", path}); err != nil {
		t.Fatal(err)
	}
	gc := c.GRPO(5)
	if gc.MaxSteps != 3 || gc.LossType != loss.CISPO || gc.EpsilonHigh != 5 || gc.ScaleRewards != loss.ScaleNone ||
		gc.MinP != 0.1 || gc.ImportanceSamplingLevel != loss.LevelSequence || gc.Delta == nil || *gc.Delta != 1.5 ||
		!gc.DynamicSampling || gc.RepetitionPenalty != 1.1 || gc.BatchSize != 8 || gc.LearningRate != 1e-4 ||
		gc.StepsPerGeneration != 3 || gc.EffectiveGenerationBatchSize() != 24 {
		t.Errorf("GRPO from -config = %+v", gc)
	}
	if err := gc.Validate(); err != nil {
		t.Error(err)
	}
	// A config file's paths may start with ~, as in a shell.
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.WriteFile(path, []byte(`{"output_dir": "~/runs/x", "model_name_or_path": "~/models/m"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c = Config{}
	if err := Parse("test", &c, &c, nil, []string{"-config", path}); err != nil {
		t.Fatal(err)
	}
	if c.Out != filepath.Join(home, "runs", "x") || c.Model != filepath.Join(home, "models", "m") {
		t.Errorf("~ paths: out %q, model %q", c.Out, c.Model)
	}
	if err := os.WriteFile(path, []byte(`{"loss_typ": "dapo"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c = Config{}
	if err := Parse("test", &c, &c, nil, []string{"-config", path}); err == nil || !strings.Contains(err.Error(), `did you mean "loss_type"`) {
		t.Errorf("typo: err = %v, want a suggestion of loss_type", err)
	}
}
