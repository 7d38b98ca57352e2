package gguf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/grpokit/grpokit/internal/quant"
)

// Dequantize decodes the data of n = len(dst) values of type t into dst,
// exactly as ggml does (ggml_fp16_to_fp32_row, ggml_bf16_to_fp32_row and
// dequantize_row_* in ggml-quants.c): the same float32 operations in the
// same order, so the results are the same bits. data holds whole blocks
// of t and its length must be what n values take. A type grpokit does
// not decode is an error wrapping ErrUnsupported that names the type.
//
// An F16 signaling NaN becomes a quiet NaN (the quiet bit set, the rest
// of the payload kept), as ggml's conversion does.
func Dequantize(t TensorType, data []byte, dst []float32) error {
	elems, bytes, ok := t.block()
	if !ok {
		return fmt.Errorf("%w: tensor type %s", ErrUnsupported, t)
	}
	if len(dst)%elems != 0 {
		return fmt.Errorf("gguf: %d values of %s: not a whole number of %d-value blocks", len(dst), t, elems)
	}
	if nb := len(dst) / elems; len(data) != nb*bytes {
		return fmt.Errorf("gguf: %d values of %s take %d bytes, got %d", len(dst), t, nb*bytes, len(data))
	}
	switch t {
	case TypeF32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	case TypeF16:
		for i := range dst {
			dst[i] = fp16(binary.LittleEndian.Uint16(data[2*i:]))
		}
	case TypeBF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(data[2*i:])) << 16)
		}
	case TypeQ4_0:
		quant.DecodeGGML(quant.Q4_0, data, dst)
	case TypeQ4_1:
		quant.DecodeGGML(quant.Q4_1, data, dst)
	case TypeQ5_0:
		dequantQ5_0(data, dst)
	case TypeQ5_1:
		dequantQ5_1(data, dst)
	case TypeQ8_0:
		quant.DecodeGGML(quant.Q8_0, data, dst)
	case TypeQ2_K:
		dequantQ2_K(data, dst)
	case TypeQ3_K:
		dequantQ3_K(data, dst)
	case TypeQ4_K:
		quant.DecodeGGML(quant.Q4_K, data, dst)
	case TypeQ5_K:
		dequantQ5_K(data, dst)
	case TypeQ6_K:
		dequantQ6_K(data, dst)
	default:
		return fmt.Errorf("%w: tensor type %s (grpokit reads F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K)", ErrUnsupported, t)
	}
	return nil
}

// fp16 is ggml's GGML_FP16_TO_FP32 (quant.FP16): exact, subnormals kept,
// a NaN quieted with its payload.
func fp16(h uint16) float32 { return quant.FP16(h) }

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

// The blocks below mirror ggml-common.h's block_* structs; each function
// is ggml-quants.c's dequantize_row_* with the same arithmetic.
//
// In every one of these types a value is (scale·sub-scale)·quant, less
// min·sub-min for the types with a min, where the scales are fp16 (11
// significant bits) and the sub-scales and quants small integers: each
// product has at most 24 significant bits (Q6_K: 11+7+5) and is exact in
// float32, so the only rounding is the final subtraction or addition.
// The result is thus the correctly rounded value of the formula, and
// neither the order of the products nor a fused multiply-add can change
// a bit (testdata/dequant/mutants.py shows both). The explicit
// float32(x*y) conversions, which stop Go from fusing x*y + z on arm64,
// ppc64 and s390x, are kept all the same, so that the code reads as
// ggml's rounding does.

// block_q5_0: d (f16), qh (32 high bits), qs[16]: (q − 16)·d.
func dequantQ5_0(data []byte, dst []float32) {
	for len(dst) >= 32 && len(data) >= 22 {
		b, y := data[:22:22], dst[:32:32]
		d := fp16(le16(b))
		qh := binary.LittleEndian.Uint32(b[2:])
		qs := b[6:22]
		for j := range 16 {
			xh0 := byte(qh>>j<<4) & 0x10
			xh1 := byte(qh>>(j+12)) & 0x10
			y[j] = float32(int32(qs[j]&0x0f|xh0)-16) * d
			y[j+16] = float32(int32(qs[j]>>4|xh1)-16) * d
		}
		data, dst = data[22:], dst[32:]
	}
}

// block_q5_1: d, m (f16), qh, qs[16]: q·d + m.
func dequantQ5_1(data []byte, dst []float32) {
	for len(dst) >= 32 && len(data) >= 24 {
		b, y := data[:24:24], dst[:32:32]
		d, m := fp16(le16(b)), fp16(le16(b[2:]))
		qh := binary.LittleEndian.Uint32(b[4:])
		qs := b[8:24]
		for j := range 16 {
			xh0 := byte(qh>>j<<4) & 0x10
			xh1 := byte(qh>>(j+12)) & 0x10
			y[j] = float32(float32(qs[j]&0x0f|xh0)*d) + m
			y[j+16] = float32(float32(qs[j]>>4|xh1)*d) + m
		}
		data, dst = data[24:], dst[32:]
	}
}

// block_q2_K: scales[16] (4-bit scale, 4-bit min), qs[64] (2-bit),
// d, dmin (f16): value = (d·sc)·q − dmin·m, per 16 values.
func dequantQ2_K(data []byte, dst []float32) {
	for len(dst) >= 256 && len(data) >= 84 {
		b, y := data[:84:84], dst[:256:256]
		scales := b[0:16]
		d, min := fp16(le16(b[80:])), fp16(le16(b[82:]))
		is := 0
		for n := 0; n < 256; n += 128 {
			q := b[16+n/4 : 16+n/4+32]
			for shift := uint(0); shift < 8; shift += 2 {
				for half := 0; half < 32; half += 16 {
					sc := scales[is]
					is++
					dl, ml := d*float32(sc&0x0f), min*float32(sc>>4)
					out := y[:16:16]
					for l := range 16 {
						out[l] = float32(dl*float32(int8(q[half+l]>>shift&3))) - ml
					}
					y = y[16:]
				}
			}
		}
		data, dst = data[84:], dst[256:]
	}
}

// block_q3_K: hmask[32] (high bits), qs[64] (low 2 bits), scales[12]
// (sixteen 6-bit scales), d (f16): value = (d·(sc − 32))·(q − 4·!h).
func dequantQ3_K(data []byte, dst []float32) {
	var sc [16]int8
	for len(dst) >= 256 && len(data) >= 110 {
		b, y := data[:110:110], dst[:256:256]
		hm := b[0:32]
		s := b[96:108]
		dAll := fp16(le16(b[108:]))
		for j := range 16 {
			lo := s[j%8] >> (4 * (j / 8)) & 0x0f
			hi := s[8+j%4] >> (2 * (j / 4)) & 3
			sc[j] = int8(lo|hi<<4) - 32
		}
		is := 0
		m := byte(1)
		for n := 0; n < 256; n += 128 {
			q := b[32+n/4 : 32+n/4+32]
			for shift := uint(0); shift < 8; shift += 2 {
				for half := 0; half < 32; half += 16 {
					dl := dAll * float32(sc[is])
					is++
					out := y[:16:16]
					for l := range 16 {
						v := int(int8(q[half+l] >> shift & 3))
						if hm[half+l]&m == 0 {
							v -= 4
						}
						out[l] = dl * float32(v)
					}
					y = y[16:]
				}
				m <<= 1
			}
		}
		data, dst = data[110:], dst[256:]
	}
}

// block_q5_K: d, dmin (f16), scales[12], qh[32], qs[128]: as Q4_K with a
// fifth bit from qh.
func dequantQ5_K(data []byte, dst []float32) {
	for len(dst) >= 256 && len(data) >= 176 {
		b, y := data[:176:176], dst[:256:256]
		d, min := fp16(le16(b)), fp16(le16(b[2:]))
		scales := b[4:16]
		qh := b[16:48]
		u1, u2 := byte(1), byte(2)
		for j := 0; j < 4; j++ {
			ql := b[48+32*j : 48+32*j+32]
			sc, m := quant.ScaleMinK4(2*j, scales)
			d1, m1 := d*float32(sc), min*float32(m)
			sc, m = quant.ScaleMinK4(2*j+1, scales)
			d2, m2 := d*float32(sc), min*float32(m)
			lo, hi := y[64*j:64*j+32:64*j+32], y[64*j+32:64*j+64:64*j+64]
			for l := range 32 {
				q1, q2 := int(ql[l]&0x0f), int(ql[l]>>4)
				if qh[l]&u1 != 0 {
					q1 += 16
				}
				if qh[l]&u2 != 0 {
					q2 += 16
				}
				lo[l] = float32(d1*float32(q1)) - m1
				hi[l] = float32(d2*float32(q2)) - m2
			}
			u1 <<= 2
			u2 <<= 2
		}
		data, dst = data[176:], dst[256:]
	}
}

// block_q6_K: ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16]
// (int8), d (f16): value = (d·sc)·(q − 32), per 16 values.
func dequantQ6_K(data []byte, dst []float32) {
	for len(dst) >= 256 && len(data) >= 210 {
		b, y := data[:210:210], dst[:256:256]
		d := fp16(le16(b[208:]))
		for n := 0; n < 2; n++ {
			ql := b[64*n : 64*n+64]
			qh := b[128+32*n : 128+32*n+32]
			sc := b[192+8*n : 192+8*n+8]
			out := y[128*n : 128*n+128]
			for l := range 32 {
				is := l / 16
				q1 := int8(ql[l]&0x0f|(qh[l]>>0&3)<<4) - 32
				q2 := int8(ql[l+32]&0x0f|(qh[l]>>2&3)<<4) - 32
				q3 := int8(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int8(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				out[l] = d * float32(int8(sc[is])) * float32(q1)
				out[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
				out[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
				out[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
			}
		}
		data, dst = data[210:], dst[256:]
	}
}
