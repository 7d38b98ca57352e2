package exkit

import (
	"testing"

	"github.com/grpokit/grpokit/model"
)

// -train lora -quantize nf4 holds the tiny model's base in NF4; -quantize
// with full fine-tuning or an unknown format is refused.
func TestQuantizeFlag(t *testing.T) {
	c := &Config{Train: "lora", LoRARank: 2, Quantize: "nf4", Out: t.TempDir(), Seed: 1}
	s, err := Load("test", c, Tiny{Words: []string{"a", "b"}, Hidden: 64, Layers: 1, Heads: 2, Intermediate: 128, MaxPositions: 32})
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Model.Storage(); st != model.StorageNF4 {
		t.Errorf("storage %q, want nf4", st)
	}
	for _, bad := range []*Config{
		{Train: "full", Quantize: "nf4"},
		{Train: "lora", LoRARank: 2, Quantize: "fp4"},
	} {
		if err := bad.Validate("test"); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
