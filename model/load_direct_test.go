package model

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// TestReadDirect: reading a tensor chunk by chunk straight into its held
// form gives, bit for bit, the whole-tensor path's values (readF32, then
// toBF16 for bfloat16; readF32Into: readF32), for every file dtype, chunk sizes that split
// values' runs unevenly, on the pure-Go backend (into its buffers) and on
// the host (no backend); a file written as F32 reads back exactly.
func TestReadDirect(t *testing.T) {
	in := make([]float32, 7*13)
	for i := range in {
		in[i] = float32(math.Sin(float64(i)*1.7)) * float32(i+1)
	}
	in[3], in[4], in[5] = float32(math.NaN()), float32(math.Inf(-1)), 1+1.0/256 // a tie: rounds to even
	b := tinyModel(t).Backend()
	defer func(c int) { readChunk = c }(readChunk)
	for _, fileDT := range []string{"F32", "BF16", "F16"} {
		path := filepath.Join(t.TempDir(), "w.safetensors")
		if err := WriteSafetensorsAs(path, []NamedTensor{{Name: "w", Shape: []int{7, 13}, Data: in}}, fileDT); err != nil {
			t.Fatal(err)
		}
		s, err := openSafetensors(path)
		if err != nil {
			t.Fatal(err)
		}
		whole, _, err := s.readF32("w")
		if err != nil {
			t.Fatal(err)
		}
		if fileDT == "F32" && !sameBits(whole, in) {
			t.Fatalf("F32 file: readF32 differs from what was written")
		}
		for _, chunk := range []int{10, 64, 4 << 20} {
			readChunk = chunk
			for _, onB := range []bool{false, true} {
				be := b
				if !onB {
					be = nil
				}
				f, err := s.readDirect(be, "w", dtypes.Float32)
				if err != nil {
					t.Fatal(err)
				}
				if got := tensors.MustCopyFlatData[float32](f); !sameBits(got, whole) || !equalInts(f.Shape().Dimensions, []int{7, 13}) {
					t.Errorf("%s file, chunk %d, backend %v: float32 values or shape %v differ", fileDT, chunk, onB, f.Shape())
				}
				h, err := s.readDirect(be, "w", dtypes.BFloat16)
				if err != nil {
					t.Fatal(err)
				}
				want := toBF16(whole)
				got := tensors.MustCopyFlatData[bfloat16.BFloat16](h)
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("%s file, chunk %d, backend %v: bf16 value %d is %#x, want %#x", fileDT, chunk, onB, i, got[i], want[i])
						break
					}
				}
				if onB && (f.IsLocal() || h.IsLocal()) {
					t.Errorf("%s file: read on the backend left a host copy", fileDT)
				}
			}
		}
		for _, dst := range [][]float32{nil, make([]float32, 5), make([]float32, 3, 200)} {
			got, err := s.readF32Into("w", dst)
			if err != nil {
				t.Fatal(err)
			}
			if !sameBits(got, whole) {
				t.Errorf("%s file: readF32Into (dst cap %d) differs from readF32", fileDT, cap(dst))
			}
			if cap(dst) >= len(whole) && &got[0] != &dst[:1][0] {
				t.Errorf("%s file: readF32Into did not reuse a large enough dst", fileDT)
			}
		}
		if _, err := s.readDirect(b, "w", dtypes.Int8); err == nil {
			t.Errorf("readDirect into int8: no error")
		}
		if _, err := s.readDirect(b, "nope", dtypes.Float32); err == nil {
			t.Errorf("readDirect of a missing tensor: no error")
		}
		s.Close()
	}
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
