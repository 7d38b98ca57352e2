package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/model"
)

// TestGGUFRoundTrip takes a trained model through GGUF and back, as a user
// of llama.cpp or Ollama would: export it, import the file as a Hugging
// Face folder (the same weights, bit for bit), generate from the .gguf
// itself (the same text as from the imported folder), and train a LoRA adapter with
// the .gguf as model_name_or_path, then run the adapter on it.
func TestGGUFRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cfgPath := toyRun(t, dir, false, 2)
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"train", "-config", cfgPath}, &out); err != nil {
		t.Fatalf("train: %v\n%s", err, out.String())
	}
	final := filepath.Join(dir, "run", "final")
	file := filepath.Join(dir, "toy.gguf")
	if err := run(ctx, []string{"export", "-model", final, "-format", "gguf", "-out", file, "-dtype", "F32", "-modelfile", ""}, &out); err != nil {
		t.Fatal(err)
	}
	hf := filepath.Join(dir, "imported")
	out.Reset()
	if err := run(ctx, []string{"import", "-gguf", file, "-out", hf}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "imported "+file+" → "+hf+" (llama, 1 layers") {
		t.Errorf("import said %q", out.String())
	}
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"} {
		if _, err := os.Stat(filepath.Join(hf, f)); err != nil {
			t.Errorf("the imported folder lacks %s", f)
		}
	}
	a, err := model.Load(final, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := model.Load(hf, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range a.Config().Weights() {
		x, _, _ := a.Weight(w.Name)
		y, _, err := b.Weight(w.Name)
		if err != nil || !slices.Equal(x, y) {
			t.Errorf("imported %s differs from the trained one (%v)", w.Name, err)
		}
	}
	if err := run(ctx, []string{"import", "-gguf", file, "-out", hf}, &out); err == nil || !strings.Contains(err.Error(), "-overwrite") {
		t.Errorf("a second import into %s: %v, want an error pointing to -overwrite", hf, err)
	}

	gen := func(args ...string) string {
		t.Helper()
		var o bytes.Buffer
		if err := run(ctx, append([]string{"generate", "-raw", "-prompt", "say dog", "-max-new-tokens", "3"}, args...), &o); err != nil {
			t.Fatalf("generate %v: %v", args, err)
		}
		return o.String()
	}
	// (final/ would apply its constraint.json, which a GGUF file does not carry.)
	if g, f := gen("-model", file), gen("-model", hf); g != f {
		t.Errorf("generate from the .gguf: %q, from the imported folder: %q", g, f)
	}

	// LoRA on the .gguf as the base model.
	cfg := readFile(t, cfgPath)
	cfg = regexp.MustCompile(`(?m)^  tiny: .*$`).ReplaceAllString(cfg, "  model_name_or_path: "+file)
	cfg = strings.Replace(cfg, "use_peft: false", "use_peft: true", 1)
	cfg = strings.Replace(cfg, "output_dir: "+filepath.Join(dir, "run"), "output_dir: "+filepath.Join(dir, "lora"), 1)
	cfg2 := filepath.Join(dir, "lora.yaml")
	if err := os.WriteFile(cfg2, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(ctx, []string{"train", "-config", cfg2, "-max-steps", "1"}, &out); err != nil {
		t.Fatalf("train on the .gguf: %v\n%s", err, out.String())
	}
	adapter := filepath.Join(dir, "lora", "final")
	for _, f := range []string{"adapter_config.json", "adapter_model.safetensors", "tokenizer.json"} {
		if _, err := os.Stat(filepath.Join(adapter, f)); err != nil {
			t.Errorf("the adapter folder lacks %s", f)
		}
	}
	withAdapter := gen("-model", file, "-adapter", adapter)

	// Back out: the .gguf base and the adapter, merged into a GGUF file
	// and into a Hugging Face folder.
	out.Reset()
	back := filepath.Join(dir, "back.gguf")
	if err := run(ctx, []string{"export", "-model", file, "-adapter", adapter, "-format", "gguf", "-out", back}, &out); err != nil {
		t.Fatalf("export of the .gguf base with its adapter: %v", err)
	}
	if !strings.Contains(out.String(), "F32") || strings.Contains(out.String(), "placeholder") {
		t.Errorf("export said %q: want the base's F32 and its own vocabulary", out.String())
	}
	merged := filepath.Join(dir, "merged")
	if err := run(ctx, []string{"merge", "-model", file, "-adapter", adapter, "-out", merged}, &out); err != nil {
		t.Fatalf("merge onto the .gguf base: %v", err)
	}
	// Both apply the run's constraint.json (the GGUF file has none).
	if m := gen("-model", merged); m != withAdapter {
		t.Errorf("generate from the merged folder: %q, from the .gguf with the adapter: %q", m, withAdapter)
	}
	gen("-model", back)
}
