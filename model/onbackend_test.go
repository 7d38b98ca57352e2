package model

import (
	"slices"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// TestWeightsLoadOnBackend checks that loaded f32 and bf16 weights already
// live in backend buffers of the pure-Go backend (no host copy waiting to
// be copied at first use) and hold the data given.
func TestWeightsLoadOnBackend(t *testing.T) {
	m := tinyModel(t)
	b := m.Backend()
	f := []float32{1, -2.5, 3, 0}
	h := []bfloat16.BFloat16{bfloat16.FromFloat32(1), bfloat16.FromFloat32(-2)}
	for name, tc := range map[string]struct {
		t    *tensors.Tensor
		want any
	}{
		"f32":  {onBackend(b, f, 2, 2), f},
		"bf16": {onBackend(b, h, 2), h},
	} {
		if !tc.t.IsOnDevice(0) || tc.t.IsLocal() {
			t.Errorf("%s: on device %v, local %v; want on the backend only", name, tc.t.IsOnDevice(0), tc.t.IsLocal())
		}
		var got any
		switch tc.want.(type) {
		case []float32:
			got = tensors.MustCopyFlatData[float32](tc.t)
		default:
			got = tensors.MustCopyFlatData[bfloat16.BFloat16](tc.t)
		}
		if !slices.Equal(toAny(got), toAny(tc.want)) {
			t.Errorf("%s: got %v, want %v", name, got, tc.want)
		}
	}
	w := m.ctx.InAbsPath("/model/layers/0/self_attn/q_proj").GetVariable("weight")
	if w == nil {
		t.Fatal("no q_proj weight variable")
	}
	v, err := w.Value()
	if err != nil {
		t.Fatal(err)
	}
	if !v.IsOnDevice(0) || v.IsLocal() {
		t.Errorf("loaded q_proj weight: on device %v, local %v; want on the backend only", v.IsOnDevice(0), v.IsLocal())
	}
}

func toAny(x any) []any {
	var out []any
	switch s := x.(type) {
	case []float32:
		for _, v := range s {
			out = append(out, v)
		}
	case []bfloat16.BFloat16:
		for _, v := range s {
			out = append(out, v)
		}
	}
	return out
}
