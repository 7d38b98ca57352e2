package gguf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestModelfile(t *testing.T) {
	dir := t.TempDir()
	gen := `{"do_sample": true, "temperature": 0.6, "top_p": 0.95, "top_k": 20, "repetition_penalty": 1.1, "eos_token_id": [151645, 151643]}`
	if err := os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(gen), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := ReadGenerationDefaults(dir)
	if err != nil {
		t.Fatal(err)
	}
	v := &Vocab{Tokens: []string{"a", "<|endoftext|>", "<|im_end|>"}, Types: []int32{tokenNormal, tokenControl, tokenControl},
		EOS: 1, ChatTemplate: "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"}
	got := Modelfile("out/model.gguf", v, g, ModelfileOptions{Name: "model.Modelfile"})
	for _, want := range []string{
		"# Ollama: ollama create NAME -f model.Modelfile, then ollama run NAME\n",
		"FROM ./out/model.gguf\n",
		"TEMPLATE \"\"\"{{- if .System }}<|im_start|>system",
		`PARAMETER stop "<|im_end|>"`,
		`PARAMETER stop "<|endoftext|>"`,
		"PARAMETER temperature 0.6\n",
		"PARAMETER top_p 0.95\n",
		"PARAMETER top_k 20\n",
		"PARAMETER repeat_penalty 1.1\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Modelfile lacks %q:\n%s", want, got)
		}
	}
	greedy := `{"do_sample": false, "temperature": 0.6}`
	if err := os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(greedy), 0o644); err != nil {
		t.Fatal(err)
	}
	if g, err = ReadGenerationDefaults(dir); err != nil {
		t.Fatal(err)
	}
	if got := Modelfile("m.gguf", v, g, ModelfileOptions{}); !strings.Contains(got, "PARAMETER temperature 0\n") {
		t.Errorf("do_sample false: want temperature 0:\n%s", got)
	}
	if g, err := ReadGenerationDefaults(t.TempDir()); g != nil || err != nil {
		t.Errorf("no generation_config.json: %v, %v; want nil, nil", g, err)
	}
}

// TestModelfilePlainPrompts: a model trained on plain prompts gets the raw
// TEMPLATE (the prompt as it is) and no chat stop strings, whatever chat
// template its tokenizer has; EOS still stops.
func TestModelfilePlainPrompts(t *testing.T) {
	v := &Vocab{Tokens: []string{"a", "<|endoftext|>", "<|im_end|>"}, Types: []int32{tokenNormal, tokenControl, tokenControl},
		EOS: 1, ChatTemplate: "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"}
	got := Modelfile("m.gguf", v, nil, ModelfileOptions{PlainPrompts: true})
	if !strings.Contains(got, "TEMPLATE \"\"\"{{ .Prompt }}\"\"\"\n") || strings.Contains(got, "<|im_start|>") ||
		strings.Contains(got, `PARAMETER stop "<|im_end|>"`) || !strings.Contains(got, `PARAMETER stop "<|endoftext|>"`) {
		t.Errorf("plain prompts: want the raw TEMPLATE, the EOS stop and no ChatML:\n%s", got)
	}
}

func TestModelfileName(t *testing.T) {
	for in, want := range map[string]string{
		"out/x.gguf": "x.Modelfile", "X.GGUF": "X.Modelfile", "model.bin": "model.bin.Modelfile", "m": "m.Modelfile",
	} {
		if got := ModelfileName(in); got != want {
			t.Errorf("ModelfileName(%q) = %q, want %q", in, got, want)
		}
	}
}
