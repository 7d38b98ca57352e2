package quant

import (
	"encoding/binary"
	"fmt"
	"math"
)

// GGML is a ggml block format that a frozen weight can be held in as the
// GGUF file stores it (QLoRA on the file's own blocks): the value of each
// code is decoded with ggml's own float32 arithmetic (ggml-quants.c's
// dequantize_row_*), so a product that decodes the blocks sees the numbers
// the file dequantizes to, bit for bit.
type GGML uint8

// The block formats a weight can be held in.
const (
	// Q4_0: blocks of 32 values, an fp16 scale d and 16 bytes of 4-bit
	// codes: (code − 8)·d.
	Q4_0 GGML = iota + 1
	// Q4_1: blocks of 32 values, fp16 d and m, 16 bytes of codes: code·d + m.
	Q4_1
	// Q8_0: blocks of 32 values, fp16 d and 32 int8 codes: code·d.
	Q8_0
	// Q4_K: super-blocks of 256 values, fp16 d and dmin, 12 bytes of 6-bit
	// sub-block scales and mins, 128 bytes of codes: (d·sc)·code − dmin·m.
	Q4_K
)

// ParseGGML returns the block format of a GGUF tensor type name ("Q4_0",
// "Q4_1", "Q8_0", "Q4_K"); ok is false for any other type.
func ParseGGML(name string) (GGML, bool) {
	switch name {
	case "Q4_0":
		return Q4_0, true
	case "Q4_1":
		return Q4_1, true
	case "Q8_0":
		return Q8_0, true
	case "Q4_K":
		return Q4_K, true
	}
	return 0, false
}

// String returns the GGUF name of t.
func (t GGML) String() string {
	switch t {
	case Q4_0:
		return "Q4_0"
	case Q4_1:
		return "Q4_1"
	case Q8_0:
		return "Q8_0"
	case Q4_K:
		return "Q4_K"
	}
	return fmt.Sprintf("GGML(%d)", uint8(t))
}

// Block returns the values and bytes of one block of t (0, 0 for an
// unknown t).
func (t GGML) Block() (values, bytes int) {
	switch t {
	case Q4_0:
		return 32, 18
	case Q4_1:
		return 32, 20
	case Q8_0:
		return 32, 34
	case Q4_K:
		return 256, 144
	}
	return 0, 0
}

// DecodeGGML decodes whole blocks of t from blocks into dst (len(dst)
// values, a multiple of t's block; blocks holds at least as many blocks).
// It panics on an unknown t or short slices.
func DecodeGGML(t GGML, blocks []byte, dst []float32) {
	vals, size := t.Block()
	if vals == 0 || len(dst)%vals != 0 || len(blocks) < len(dst)/vals*size {
		panic(fmt.Sprintf("quant: DecodeGGML %v: %d values from %d bytes", t, len(dst), len(blocks)))
	}
	for len(dst) > 0 {
		b, y := blocks[:size:size], dst[:vals:vals]
		switch t {
		case Q4_0:
			d := FP16(le16(b))
			qs := b[2:18]
			for j := range 16 {
				y[j] = float32(int(qs[j]&0x0f)-8) * d
				y[j+16] = float32(int(qs[j]>>4)-8) * d
			}
		case Q4_1:
			d, m := FP16(le16(b)), FP16(le16(b[2:]))
			qs := b[4:20]
			for j := range 16 {
				y[j] = float32(float32(qs[j]&0x0f)*d) + m
				y[j+16] = float32(float32(qs[j]>>4)*d) + m
			}
		case Q8_0:
			d := FP16(le16(b))
			qs := b[2:34]
			for j := range 32 {
				y[j] = float32(int8(qs[j])) * d
			}
		case Q4_K:
			d, dmin := FP16(le16(b)), FP16(le16(b[2:]))
			scales := b[4:16]
			for j := range 4 {
				q := b[16+32*j : 16+32*j+32]
				sc, m := ScaleMinK4(2*j, scales)
				d1, m1 := d*float32(sc), dmin*float32(m)
				sc, m = ScaleMinK4(2*j+1, scales)
				d2, m2 := d*float32(sc), dmin*float32(m)
				lo, hi := y[64*j:64*j+32:64*j+32], y[64*j+32:64*j+64:64*j+64]
				for l := range 32 {
					lo[l] = float32(d1*float32(q[l]&0x0f)) - m1
					hi[l] = float32(d2*float32(q[l]>>4)) - m2
				}
			}
		}
		blocks, dst = blocks[size:], dst[vals:]
	}
}

// DecodeGGMLAt writes the values of flat indices off … off+len(dst)−1 of
// the blocks of t to dst: whole blocks are decoded in place, the partial
// ones at either end through a scratch block.
func DecodeGGMLAt(t GGML, blocks []byte, dst []float32, off int) {
	vals, size := t.Block()
	var tmp [256]float32
	for i := 0; i < len(dst); {
		blk, in := (off+i)/vals, (off+i)%vals
		if in == 0 && len(dst)-i >= vals {
			n := (len(dst) - i) / vals
			DecodeGGML(t, blocks[blk*size:], dst[i:i+n*vals])
			i += n * vals
			continue
		}
		DecodeGGML(t, blocks[blk*size:], tmp[:vals])
		i += copy(dst[i:], tmp[in:vals])
	}
}

// ScaleMinK4 is ggml's get_scale_min_k4: the j-th 6-bit scale and min of a
// Q4_K or Q5_K block's 12 scale bytes.
func ScaleMinK4(j int, q []byte) (d, m byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0x0f | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

// FP16 converts IEEE half-precision bits to float32 exactly, as ggml's
// GGML_FP16_TO_FP32 does (a NaN keeps its payload with the quiet bit set).
func FP16(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch exp {
	case 0:
		return math.Float32frombits(math.Float32bits(float32(man)*0x1p-24) | sign)
	case 0x1f:
		if man != 0 {
			man |= 0x200
		}
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}
