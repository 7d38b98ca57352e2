package main

import (
	"os/exec"
	"testing"
)

// TestRunScriptParses checks that bench/run.sh, which drives this program
// and its PyTorch twin, is valid shell: a quoting slip once broke the
// script while every Go test passed.
func TestRunScriptParses(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	if out, err := exec.Command(bash, "-n", "../run.sh").CombinedOutput(); err != nil {
		t.Fatalf("bash -n bench/run.sh: %v\n%s", err, out)
	}
}
