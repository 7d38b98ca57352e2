package exkit

import (
	"bytes"
	"os"
	"testing"

	"github.com/grpokit/grpokit/grpo"
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
