package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptsParse: the kit's shell scripts are valid bash (the device
// run is the first place they would otherwise fail).
func TestScriptsParse(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	for _, s := range []string{"run.sh", "stage.sh"} {
		if out, err := exec.Command(bash, "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
	}
}

// TestTestsList: every line of tests.txt names a package folder with
// tests, a dtype label and a pattern.
func TestTestsList(t *testing.T) {
	data, err := os.ReadFile("tests.txt")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		n++
		if len(f) != 3 || (f[1] != "f32" && f[1] != "bf16") {
			t.Errorf("line %q: want PACKAGE f32|bf16 PATTERN", line)
			continue
		}
		tests, _ := filepath.Glob(filepath.Join("..", "..", f[0], "*_test.go"))
		if len(tests) == 0 {
			t.Errorf("line %q: no tests in ../../%s", line, f[0])
		}
	}
	if n == 0 {
		t.Error("tests.txt lists no tests")
	}
}

func TestGoldenSummary(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	text := `=== RUN   TestGoldenLogits
=== RUN   TestGoldenLogits/llama-tiny
    golden_test.go:90: logits: max |diff| 3.1e-05
--- PASS: TestGoldenLogits (0.50s)
    --- PASS: TestGoldenLogits/llama-tiny (0.50s)
=== RUN   TestGoldenLogitsBF16
    precision_test.go:45: vs logits_bf16: mean |diff| 0.2000, max 1.5000; own rounding (vs logits_bf16w) mean 0.07, HF's 0.06 (max 2.5)
    precision_test.go:50: bf16 logits: mean |diff| 0.2000 (want ≤ 0.1), max 1.5000 (want ≤ 1.0)
--- FAIL: TestGoldenLogitsBF16 (1.00s)
=== RUN   TestLossGolden
    loss_test.go:40: dapo: loss = 0.5, want 0.25
--- FAIL: TestLossGolden (0.10s)
=== RUN   TestX
--- SKIP: TestX (0.00s)
FAIL
`
	if err := os.WriteFile(log, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run([]string{"golden", log, "^(TestGoldenLogits|TestGoldenLogitsBF16|TestX|TestGone)$"}, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := "1 pass, 2 fail, 1 skip: TestGoldenLogitsBF16 (max abs diff 1.5); TestLossGolden (dapo: loss = 0.5, want 0.25); largest abs diff among passes 3.1e-05 (TestGoldenLogits); not run: TestGone"
	if lines[len(lines)-1] != want {
		t.Errorf("last line %q, want %q\n%s", lines[len(lines)-1], want, out.String())
	}
	if !strings.Contains(out.String(), "PASS TestGoldenLogits (max abs diff 3.1e-05)") {
		t.Errorf("no pass line with its difference:\n%s", out.String())
	}
}

func TestPokerAndStepSummaries(t *testing.T) {
	dir := t.TempDir()
	var metrics strings.Builder
	for i := range 20 {
		r := 0.1
		if i >= 10 {
			r = 0.5
		}
		fmt.Fprintf(&metrics, `{"step": %d, "reward": %g, "step_time": 0.5}`+"\n", i+1, r)
	}
	mpath := filepath.Join(dir, "metrics.jsonl")
	if err := os.WriteFile(mpath, []byte(metrics.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run([]string{"poker", mpath}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "20 steps, 2.00 steps/s, reward 0.100 → 0.500") {
		t.Errorf("poker summary:\n%s", out.String())
	}
	goJSON, hfJSON := filepath.Join(dir, "go.json"), filepath.Join(dir, "hf.json")
	for path, text := range map[string]string{
		goJSON: `{"variant": "lora", "step_s": 2, "first_step_s": 10, "generate_s": 1.5, "train_s": 0.5, "prompts": 8, "g": 8, "decode_step_s": 0.004, "decode_bound_s": 0.001}`,
		hfJSON: `{"variant": "lora", "step_s": 5}`,
	} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out.Reset()
	if err := run([]string{"step", goJSON, hfJSON}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"grpokit 2.000 s/step", "speed-up 2.50×", "decode at batch 64: 4.00 ms/step, 16000 tokens/s, 25% of the bandwidth bound"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("step summary lacks %q:\n%s", want, out.String())
		}
	}
}

func TestInfoOnGoBackend(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	var out strings.Builder
	if err := run([]string{"info"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "ok: ") {
		t.Errorf("info:\n%s", out.String())
	}
	if err := run([]string{"nonsense"}, &out); err == nil {
		t.Error("an unknown command gave no error")
	}
}
