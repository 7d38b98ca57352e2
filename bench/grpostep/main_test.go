package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRunTiny runs every variant on a tiny model with PyTorch figures
// from a fixture and checks the report: the parts, the ratio line computed
// from the fixture's step median, and the decode line of genheavy.
func TestRunTiny(t *testing.T) {
	torch := filepath.Join(t.TempDir(), "torch.json")
	fixture := `{"info": "fixture", "seconds": {"first": 40, "step": 20, "generate": 5, "reward": 0.001, "train": 15, "step_cpu": 40, "decode": 0.05, "tokens_per_s": 90}, "memory": {"peak_rss_mb": 5000}}`
	if err := os.WriteFile(torch, []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"full", "lora", "genheavy", "varlen"} {
		t.Run(v, func(t *testing.T) {
			var out strings.Builder
			args := []string{"-tiny", "-variant", v, "-steps", "1", "-torch", torch}
			if v == "genheavy" {
				args = append(args, "-decode")
			}
			if err := run(args, &out); err != nil {
				t.Fatal(err)
			}
			text := out.String()
			for _, want := range []string{"PyTorch: fixture", "| first step (compiles)", "|   generation", "|   training (fwd+bwd+AdamW)", "| peak RSS, MB", "| step, CPU s"} {
				if !strings.Contains(text, want) {
					t.Errorf("report lacks %q:\n%s", want, text)
				}
			}
			label := "grpostep ratio"
			if v != "full" {
				label += " \\(" + v + "\\)"
			}
			lines := strings.Split(strings.TrimSpace(text), "\n")
			if last := lines[len(lines)-1]; !regexp.MustCompile("^" + label + `: [0-9]+\.[0-9]{2}× vs PyTorch$`).MatchString(last) {
				t.Errorf("last line %q, want %q: X.XX× vs PyTorch", last, label)
			}
			if v == "genheavy" && !strings.Contains(text, "of the memory-bandwidth bound") {
				t.Errorf("genheavy report lacks the decode line:\n%s", text)
			}
			if v == "varlen" {
				for _, re := range []string{`\| useful tokens/s +\| +[0-9.]+ \| +90\.0 \| +[0-9.]+× \|`, `finished rows dropped [0-9.]+ s, kept [0-9.]+ s: [0-9.]+× \(same tokens; CPU s`, `PyTorch keeps every row`} {
					if !regexp.MustCompile(re).MatchString(text) {
						t.Errorf("varlen report lacks %s:\n%s", re, text)
					}
				}
			}
		})
	}
}

// TestRunAnchors: with an eager and a compiled PyTorch run, the table has
// a column for each, the compile warm-up is shown apart, and the ratio
// lines give grpokit against each run and then against the faster, named.
func TestRunAnchors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	eager := write("eager.json", `{"label": "torch 2.15.0 eager", "info": "torch 2.15.0 eager, BLAS mkl, ISA AVX512", "seconds": {"first": 30, "step": 20, "train": 15, "step_cpu": 40}, "memory": {"peak_rss_mb": 900}}`)
	compiled := write("compile.json", `{"label": "torch 2.15.0 compile", "info": "torch 2.15.0 compile, BLAS mkl, ISA AVX512", "seconds": {"first": 25, "step": 10, "train": 8, "step_cpu": 20, "compile": 60}, "memory": {"peak_rss_mb": 1200}}`)
	var out strings.Builder
	path := filepath.Join(dir, "out.json")
	if err := run([]string{"-tiny", "-variant", "lora", "-steps", "1", "-torch", eager + "," + compiled, "-json", path}, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, re := range []string{
		`PyTorch: torch 2\.15\.0 eager, BLAS mkl, ISA AVX512\n`,
		`PyTorch: torch 2\.15\.0 compile, BLAS mkl, ISA AVX512\n`,
		`\| part +\| +grpokit s \| torch 2\.15\.0 eager s \| +ratio \| torch 2\.15\.0 compile s \| +ratio \|`,
		`\| torch\.compile warm-up +\| +- \| +- \| +\| +60\.000 \| +\|`,
		`\| peak RSS, MB +\| +[0-9]+ \| +900 \| +\| +1200 \| +\|`,
		`grpostep ratio \(lora\) vs torch 2\.15\.0 eager: [0-9]+\.[0-9]{2}×\n`,
		`grpostep ratio \(lora\) vs torch 2\.15\.0 compile: [0-9]+\.[0-9]{2}×\n`,
		`grpostep ratio \(lora\): [0-9]+\.[0-9]{2}× vs torch 2\.15\.0 compile \(the fastest of 2 PyTorch runs\)\n$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("report lacks %s:\n%s", re, text)
		}
	}
	r := readResults(t, path)
	if r.TorchStepSeconds != 10 || r.TorchAnchor != "torch 2.15.0 compile" {
		t.Errorf("JSON anchor %q, %v s; want torch 2.15.0 compile, 10 s", r.TorchAnchor, r.TorchStepSeconds)
	}
}

// TestRunTRL: a TRL run of the step is a column and a ratio line of its
// own, never the anchor even when it is the fastest, and only the steps TRL
// runs take one.
func TestRunTRL(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeFile(t, dir, name, body) }
	eager := write("eager.json", `{"label": "torch 2.15.0 eager", "seconds": {"first": 30, "step": 20}}`)
	trl := write("trl.json", `{"label": "TRL 1.16.0", "info": "trl 1.16.0, transformers 5.24.0", "seconds": {"first": 9, "step": 5, "trl_step_time": 4}, "memory": {"peak_rss_mb": 2000}}`)
	var out strings.Builder
	path := filepath.Join(dir, "out.json")
	if err := run([]string{"-tiny", "-variant", "full", "-steps", "1", "-torch", eager, "-trl", trl, "-json", path}, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, re := range []string{
		`TRL: trl 1\.16\.0, transformers 5\.24\.0\n`,
		`\| part +\| +grpokit s \| torch 2\.15\.0 eager s \| +ratio \| +TRL 1\.16\.0 s \| +ratio \|`,
		`\| peak RSS, MB +\| +[0-9]+ \| +- \| +\| +2000 \| +\|`,
		`grpostep ratio vs TRL 1\.16\.0 GRPOTrainer: [0-9]+\.[0-9]{2}×\n`,
		`grpostep ratio: [0-9]+\.[0-9]{2}× vs torch 2\.15\.0 eager\n$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("report lacks %s:\n%s", re, text)
		}
	}
	r := readResults(t, path)
	if r.TorchAnchor != "torch 2.15.0 eager" || r.TRLStepSeconds != 5 || r.TRLLabel != "TRL 1.16.0" {
		t.Errorf("JSON anchor %q, TRL %q %v s; want torch 2.15.0 eager, TRL 1.16.0 5 s", r.TorchAnchor, r.TRLLabel, r.TRLStepSeconds)
	}
	if err := run([]string{"-tiny", "-variant", "genheavy", "-steps", "1", "-trl", trl}, io.Discard); err == nil || !strings.Contains(err.Error(), "full and lora") {
		t.Errorf("genheavy with -trl: err = %v, want a refusal naming the full and lora steps", err)
	}
}

func TestAnchor(t *testing.T) {
	runs := []torchRun{{sec: map[string]float64{"step": 3}}, {sec: map[string]float64{}}, {sec: map[string]float64{"step": 2}}}
	if got := anchor(runs); got != 2 {
		t.Errorf("anchor = %d, want 2 (the shortest step)", got)
	}
	if got := anchor(runs[1:2]); got != -1 {
		t.Errorf("anchor without a step = %d, want -1", got)
	}
}

func TestRunDecodeOnly(t *testing.T) {
	var out strings.Builder
	if err := run([]string{"-tiny", "-variant", "genheavy", "-decodeonly"}, &out); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`decode step at batch 32: [0-9.]+ ms = [0-9]+% of the memory-bandwidth bound`).MatchString(out.String()) {
		t.Errorf("no decode line:\n%s", out.String())
	}
	out.Reset()
	if err := run([]string{"-tiny", "-variant", "full", "-decodeonly"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "decode step at batch 16:") {
		t.Errorf("-decodeonly -variant full: no decode line at the variant's batch of 16:\n%s", out.String())
	}
}

func TestRunRejectsUnknownVariant(t *testing.T) {
	if err := run([]string{"-variant", "huge"}, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "huge") {
		t.Errorf("err = %v, want one naming the variant", err)
	}
}

// TestRunShapeFlagsAndJSON: the GPU kit's invocation, a changed step shape
// with a decode step against a given bandwidth, writes its figures as
// JSON; a micro-batch that does not divide the rows is refused.
func TestRunShapeFlagsAndJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	var out strings.Builder
	if err := run([]string{"-tiny", "-variant", "lora", "-prompts", "2", "-g", "3", "-prompt-len", "5", "-new-tokens", "3",
		"-steps", "1", "-decode", "-bandwidth", "10", "-json", path}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2 prompts × G=3, 5 prompt tokens, 3 sampled tokens") || !strings.Contains(out.String(), "memory bandwidth (given): 10 GB/s") {
		t.Errorf("report:\n%s", out.String())
	}
	r := readResults(t, path)
	if r.Prompts != 2 || r.G != 3 || r.NewTokens != 3 || !r.LoRA || r.StepSeconds <= 0 || r.DecodeSeconds <= 0 || r.DecodeBoundSeconds <= 0 {
		t.Errorf("JSON %+v", r)
	}
	if err := run([]string{"-tiny", "-prompts", "2", "-g", "3", "-micro-batch", "4"}, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "-micro-batch 4") {
		t.Errorf("-micro-batch 4 of 6 rows: error %v", err)
	}
}

// readResults reads a -json output file.
func readResults(t *testing.T, path string) results {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r results
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// writeFile writes body to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
