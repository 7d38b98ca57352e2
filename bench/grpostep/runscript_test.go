package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

// fakePython is a stand-in for PYTHON: it "has" torch 2.15.0 and trl
// 1.16.0; as bench/trl/grpostep.py it prints TRL's step (8 s); as
// bench/torch_grpostep.py it prints an eager run (step 2 s) or, with
// COMPILE=1, a compiled one (step 1 s), except that the compiled run of
// the full variant fails, as torch.compile can. With NO_TORCH set it has
// no torch.
const fakePython = `#!/bin/sh
[ -z "${NO_TORCH:-}" ] || exit 1
if [ "$1" = -c ]; then
	case $2 in *print*) echo 2.15.0+cpu ;; esac
	exit 0
fi
case $1 in *trl/grpostep.py)
	echo '{"label": "TRL 1.16.0", "info": "TRL 1.16.0 on '"$MODEL"', fake", "seconds": {"first": 9, "step": 8}}'
	exit 0 ;;
esac
if [ "$COMPILE" = 1 ]; then
	[ "$VARIANT" != full ] || { echo "inductor: no" >&2; exit 1; }
	echo '{"label": "torch 2.15.0 compile", "info": "torch 2.15.0 compile, fake", "seconds": {"first": 3, "step": 1, "compile": 9}}'
else
	echo '{"label": "torch 2.15.0 eager", "info": "torch 2.15.0 eager, fake", "seconds": {"first": 3, "step": 2}}'
fi
`

// TestRunScriptAnchors runs bench/run.sh grpostep on tiny lora and full
// steps with a fake PyTorch and TRL: each variant gets its ratio to TRL's
// step, then a ratio line per PyTorch run and one against the faster,
// named; a failed compile run leaves the eager one; a PYTHON without torch
// is refused before anything runs.
func TestRunScriptAnchors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bench/grpostep and runs two tiny steps")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on this machine")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	py := filepath.Join(t.TempDir(), "python")
	if err := os.WriteFile(py, []byte(fakePython), 0o755); err != nil {
		t.Fatal(err)
	}
	model := t.TempDir()
	if err := os.WriteFile(filepath.Join(model, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, "../run.sh", "grpostep")
	cmd.Env = append(os.Environ(), "PYTHON="+py, "TRL_MODEL="+model, "TINY=1", "STEPS=1", "VARIANTS=lora full", "COMPARE=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench/run.sh grpostep: %v\n%s", err, out)
	}
	text := string(out)
	lines := strings.Split(strings.TrimSpace(text), "\n")
	x := `[0-9]+\.[0-9]{2}×`
	want := []string{
		`^grpostep ratio \(lora\) vs TRL 1\.16\.0 GRPOTrainer: ` + x + `$`,
		`^grpostep ratio \(lora\) vs torch 2\.15\.0 eager: ` + x + `$`,
		`^grpostep ratio \(lora\) vs torch 2\.15\.0 compile: ` + x + `$`,
		`^grpostep ratio \(lora\): ` + x + ` vs torch 2\.15\.0 compile \(the fastest of 2 PyTorch runs\)$`,
		`^grpostep ratio vs TRL 1\.16\.0 GRPOTrainer: ` + x + `$`,
		`^grpostep ratio: ` + x + ` vs torch 2\.15\.0 eager$`,
	}
	if len(lines) < len(want) {
		t.Fatalf("output:\n%s", text)
	}
	for i, re := range want {
		if got := lines[len(lines)-len(want)+i]; !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("ratio line %d: %q, want %s\n%s", i, got, re, text)
		}
	}
	for _, s := range []string{"PyTorch: torch 2.15.0 compile, fake", "COMPILE=1 failed for full", "| torch.compile warm-up", "TRL: TRL 1.16.0 on " + model + ", fake"} {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q:\n%s", s, text)
		}
	}

	cmd = exec.Command(sh, "../run.sh", "grpostep")
	cmd.Env = append(os.Environ(), "PYTHON="+py, "NO_TORCH=1")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "cannot import torch") {
		t.Errorf("PYTHON without torch: %v\n%s", err, out)
	}
}
