package gguf

import (
	"encoding/binary"
	"math"

	"github.com/grpokit/grpokit/internal/backend"
	"github.com/x448/float16"
)

// encode appends the values of x in type t to dst. For the block types
// len(x) is a multiple of 32 (a row is never split across blocks because
// each row's length is).
func encode(dst []byte, t TensorType, x []float32) []byte {
	switch t {
	case tF32:
		for _, v := range x {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
		}
	case tF16:
		for _, v := range x {
			dst = binary.LittleEndian.AppendUint16(dst, float16.Fromfloat32(v).Bits())
		}
	case tBF16:
		for _, v := range x {
			dst = binary.LittleEndian.AppendUint16(dst, backend.RoundBF16(v).Bits())
		}
	case tQ8_0:
		for i := 0; i < len(x); i += 32 {
			dst = q8Block(dst, x[i:i+32])
		}
	case tQ4_0:
		for i := 0; i < len(x); i += 32 {
			dst = q4Block(dst, x[i:i+32])
		}
	}
	return dst
}

// q8Block is ggml's block_q8_0: an F16 scale d = max|x|/127 and 32 int8
// values round(x/d), rounded half away from zero (C's roundf).
func q8Block(dst []byte, x []float32) []byte {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	dst = binary.LittleEndian.AppendUint16(dst, float16.Fromfloat32(d).Bits())
	for _, v := range x {
		dst = append(dst, byte(int8(math.Round(float64(v*id)))))
	}
	return dst
}

// q4Block is ggml's block_q4_0: an F16 scale d = m/-8, where m is the
// value of largest magnitude (its sign kept), and 32 4-bit values
// min(15, trunc(x/d + 8.5)); byte j holds element j in its low nibble and
// element j+16 in its high one.
func q4Block(dst []byte, x []float32) []byte {
	var amax, m float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, m = a, v
		}
	}
	d := m / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	dst = binary.LittleEndian.AppendUint16(dst, float16.Fromfloat32(d).Bits())
	q := func(v float32) byte { return byte(min(15, int8(v*id+8.5))) }
	for j := range 16 {
		dst = append(dst, q(x[j])|q(x[j+16])<<4)
	}
	return dst
}
