package model

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDecoderOnly loads an untied checkpoint without its lm_head (as a
// sequence classifier is stored): a full Load refuses it, DecoderOnly
// loads it, asking that model for logits is an error (the tied fallback
// to the embeddings would be silently wrong), and ReadTensor reads a
// tensor the model does not hold.
func TestDecoderOnly(t *testing.T) {
	g := loadGolden(t, "qwen2-tiny") // untied
	dir := t.TempDir()
	ts, err := ReadSafetensors(filepath.Join(g.dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	head := slices.IndexFunc(ts, func(x NamedTensor) bool { return x.Name == "lm_head.weight" })
	if head < 0 {
		t.Fatal("qwen2-tiny has no lm_head")
	}
	ts[head].Name = "score.weight" // any tensor the decoder does not use
	if err := WriteSafetensors(filepath.Join(dir, "model.safetensors"), ts); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(g.dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, nil); err == nil || !strings.Contains(err.Error(), "lm_head.weight") {
		t.Fatalf("a full load without lm_head: %v, want an error naming it", err)
	}
	m, err := Load(dir, &Options{DecoderOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Logits(g.batch()); err == nil || !strings.Contains(err.Error(), "without an LM head") {
		t.Fatalf("logits of a decoder-only model: %v, want an error", err)
	}
	data, shape, err := ReadTensor(dir, "score.weight")
	if err != nil || !slices.Equal(shape, ts[head].Shape) || !slices.Equal(data, ts[head].Data) {
		t.Fatalf("ReadTensor: shape %v, err %v", shape, err)
	}
	if _, _, err := ReadTensor(dir, "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("ReadTensor of a missing tensor: %v", err)
	}
}
