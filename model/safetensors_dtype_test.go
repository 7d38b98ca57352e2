package model_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/grpokit/grpokit/model"
)

func TestWriteSafetensorsAs(t *testing.T) {
	in := []model.NamedTensor{{Name: "model.embed_tokens.weight", Shape: []int{2, 2}, Data: []float32{1, -2.5, 1.00390625, 3.015625}}}
	// bf16 keeps 8 significant bits: 1+2⁻⁸ is a tie that rounds to even (1),
	// 3.015625 = (1.5+2⁻⁷)·2 is exact.
	for dtype, want := range map[string][]float32{"F32": in[0].Data, "BF16": {1, -2.5, 1, 3.015625}, "F16": in[0].Data} {
		dir := t.TempDir()
		if err := model.WriteSafetensorsAs(filepath.Join(dir, "model.safetensors"), in, dtype); err != nil {
			t.Fatal(err)
		}
		got, err := model.ReadSafetensors(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[0].Data, want) {
			t.Errorf("%s: read back %v, want %v", dtype, got[0].Data, want)
		}
		if d, err := model.WeightsDType(dir); err != nil || d != dtype {
			t.Errorf("WeightsDType = %q, %v; want %s", d, err, dtype)
		}
	}
	if err := model.WriteSafetensorsAs(filepath.Join(t.TempDir(), "x"), in, "F64"); err == nil {
		t.Error("F64: no error")
	}
}
