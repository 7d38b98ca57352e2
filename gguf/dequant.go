package gguf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/x448/float16"
)

// Dequantize decodes the data of n = len(dst) values of type t into dst,
// exactly as ggml's to_float does (dequantize_row_* in ggml-quants.c): the
// same float operations in the same order, so the results are the same
// bits. data holds whole blocks of t and its length must be what n
// values take. A type grpokit does not decode is an error wrapping
// ErrUnsupported.
func Dequantize(t TensorType, data []byte, dst []float32) error {
	elems, bytes, ok := t.block()
	if !ok {
		return fmt.Errorf("%w: tensor type %s", ErrUnsupported, t)
	}
	if len(dst)%elems != 0 || len(data) != len(dst)/elems*bytes {
		return fmt.Errorf("gguf: %d values of %s take %d bytes, got %d", len(dst), t, len(dst)/elems*bytes, len(data))
	}
	switch t {
	case TypeF32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	case TypeF16:
		for i := range dst {
			dst[i] = float16.Frombits(binary.LittleEndian.Uint16(data[2*i:])).Float32()
		}
	case TypeBF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(data[2*i:])) << 16)
		}
	default:
		return fmt.Errorf("%w: tensor type %s (grpokit reads F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K)", ErrUnsupported, t)
	}
	return nil
}
