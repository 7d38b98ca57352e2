package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/internal/sharedtest"
)

// TestExportGolden: export works on a golden folder as it is (no tokenizer
// files), says that the vocabulary is a placeholder, and writes a GGUF v3
// file and a Modelfile naming it.
func TestExportGolden(t *testing.T) {
	golden := sharedtest.Dir(t, "golden", "llama-tiny")
	dir := t.TempDir()
	out := filepath.Join(dir, "llama.gguf")
	var msg bytes.Buffer
	if err := run(context.Background(), []string{"export", "-model", golden, "-format", "gguf", "-out", out, "-dtype", "Q8_0"}, &msg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"placeholder vocabulary of 512 tokens", "Q8_0", "ollama create"} {
		if !strings.Contains(msg.String(), want) {
			t.Errorf("output %q does not mention %q", msg.String(), want)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 8 || string(b[:4]) != "GGUF" || binary.LittleEndian.Uint32(b[4:]) != 3 {
		t.Errorf("%s does not start with GGUF version 3: % x", out, b[:min(8, len(b))])
	}
	mf, err := os.ReadFile(filepath.Join(dir, "llama.Modelfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mf), "FROM ./llama.gguf\n") {
		t.Errorf("Modelfile:\n%s\nwant FROM ./llama.gguf", mf)
	}
}

// TestExportCheckpoint: a checkpoint-N folder exports from its policy/.
func TestExportCheckpoint(t *testing.T) {
	golden := sharedtest.Dir(t, "golden", "qwen2-tiny")
	dir := t.TempDir()
	policy := filepath.Join(dir, "checkpoint-3", "policy")
	if err := os.MkdirAll(policy, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(golden, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(policy, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var msg bytes.Buffer
	out := filepath.Join(dir, "out", "q.gguf")
	if err := run(context.Background(), []string{"export", "-model", filepath.Join(dir, "checkpoint-3"), "-out", out, "-modelfile", ""}, &msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg.String(), "qwen2, F32") {
		t.Errorf("output %q: want a qwen2 F32 file", msg.String())
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "q.Modelfile")); err == nil {
		t.Error(`-modelfile "" wrote a Modelfile`)
	}
}

// TestExportTwoIntoOneFolder: two exports into one folder each get their
// own Modelfile, named after their file; before, both wrote "Modelfile"
// and the second failed on the first's.
func TestExportTwoIntoOneFolder(t *testing.T) {
	golden := sharedtest.Dir(t, "golden", "llama-tiny")
	dir := t.TempDir()
	for _, name := range []string{"x", "y"} {
		var msg bytes.Buffer
		out := filepath.Join(dir, name+".gguf")
		if err := run(context.Background(), []string{"export", "-model", golden, "-out", out}, &msg); err != nil {
			t.Fatalf("export %s: %v", out, err)
		}
		mf := filepath.Join(dir, name+".Modelfile")
		if want := "wrote " + mf + ": ollama create NAME -f " + mf; !strings.Contains(msg.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, msg.String())
		}
		b, err := os.ReadFile(mf)
		if err != nil {
			t.Fatal(err)
		}
		if want := "FROM ./" + name + ".gguf\n"; !strings.Contains(string(b), want) || !strings.Contains(string(b), "-f "+name+".Modelfile") {
			t.Errorf("%s:\n%s\nwant %q and its own name", mf, b, want)
		}
	}
}

// TestExportPlainPromptModel: a model trained on plain prompts (the toy
// run's "say cat" rows) is exported with a Modelfile whose TEMPLATE sends
// the prompt as it is, not wrapped in the chat template; the run records
// it in final/ and in each checkpoint's policy/.
func TestExportPlainPromptModel(t *testing.T) {
	dir := t.TempDir()
	cfg := toyRun(t, dir, false, 1)
	if err := run(context.Background(), []string{"train", "-quiet", "-config", cfg}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	for _, from := range []string{"final", "checkpoint-1"} {
		out := filepath.Join(dir, from+".gguf")
		if err := run(context.Background(), []string{"export", "-model", filepath.Join(runDir, from), "-out", out}, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		mf := readFile(t, filepath.Join(dir, from+".Modelfile"))
		if !strings.Contains(mf, "TEMPLATE \"\"\"{{ .Prompt }}\"\"\"\n") || strings.Contains(mf, ".Messages") {
			t.Errorf("%s's Modelfile: want TEMPLATE {{ .Prompt }} and no chat template:\n%s", from, mf)
		}
	}
	// Chat prompts (system_prompt makes each row a chat) record nothing.
	chat := t.TempDir()
	cfg = toyRun(t, chat, false, 1)
	rewriteConfig(t, cfg, func(body string) string {
		return strings.Replace(body, "  prompt: question\n", "  prompt: question\n  system_prompt: Answer.\n", 1)
	})
	if err := run(context.Background(), []string{"train", "-quiet", "-config", cfg}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(chat, "run", "final", "prompt_format.json")); !os.IsNotExist(err) {
		t.Errorf("a run on chat prompts wrote prompt_format.json (%v)", err)
	}
}

// TestExportBadInput: each bad input is an error naming the problem, and
// nothing is written (no output, no temporary file, an existing output
// unchanged).
func TestExportBadInput(t *testing.T) {
	golden := sharedtest.Dir(t, "golden")
	llama := filepath.Join(golden, "llama-tiny")
	unknown := t.TempDir()
	if err := os.WriteFile(filepath.Join(unknown, "config.json"), []byte(`{"model_type": "gemma2", "vocab_size": 8, "hidden_size": 4}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		args    []string
		before  map[string]string // files in the output folder beforehand
		wantErr string
	}{
		{"existing output", []string{"-model", llama}, map[string]string{"m.gguf": "keep"}, "already exists"},
		{"existing Modelfile", []string{"-model", llama}, map[string]string{"m.Modelfile": "keep"}, "already exists"},
		{"adapter of another base", []string{"-model", llama, "-adapter", filepath.Join(golden, "qwen3-tiny", "lora")}, nil, "does not fit the model"},
		{"dtype GGUF cannot hold", []string{"-model", llama, "-dtype", "Q5_K"}, nil, `dtype "Q5_K"`},
		{"architecture GGUF export does not know", []string{"-model", unknown}, nil, `"gemma2"`},
		{"an adapter as the model", []string{"-model", filepath.Join(golden, "llama-tiny", "lora")}, nil, "holds a LoRA adapter"},
		{"another format", []string{"-model", llama, "-format", "onnx"}, nil, `-format "onnx"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range c.before {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := append([]string{"export", "-out", filepath.Join(dir, "m.gguf")}, c.args...)
			err := run(context.Background(), args, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want one mentioning %q", err, c.wantErr)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != len(c.before) {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("the output folder holds %v after the error, want only %d files from before", names, len(c.before))
			}
			for name, content := range c.before {
				if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != content {
					t.Errorf("%s changed to %q", name, b)
				}
			}
		})
	}
}
