// Package quant holds the weight formats of QLoRA: bitsandbytes' 4-bit
// NormalFloat (NF4) with blocks of 64 values, an absmax per block and
// optional double quantization of the absmax, and LLM.int8's int8 with an
// absmax per output row. It is plain Go on flat slices; package model
// stores weights in these formats and widens them to float32 inside each
// product.
//
// The numerics follow bitsandbytes (functional.py quantize_4bit /
// dequantize_4bit, quantize_blockwise, int8_vectorwise_quant, and the CUDA
// kernels' dQuantizeNF4 decision tree): a value is scaled by 1/absmax of
// its block and mapped to the nearest code, a value exactly between two
// codes going to the lower one; two codes share a byte, the first in the
// high nibble.
package quant

import (
	"errors"
	"fmt"
	"math"
)

// BlockSize is bitsandbytes' default block of quantize_4bit: one absmax per
// 64 consecutive values.
const BlockSize = 64

// NF4 is the 4-bit NormalFloat code table of bitsandbytes (QLoRA, Dettmers
// et al. 2023, appendix E): the quantiles of N(0, 1) scaled to [-1, 1],
// with an exact 0. Code i dequantizes to NF4[i]·absmax.
var NF4 = [16]float32{
	-1.0,
	-0.6961928009986877,
	-0.5250730514526367,
	-0.39491748809814453,
	-0.28444138169288635,
	-0.18477343022823334,
	-0.09105003625154495,
	0.0,
	0.07958029955625534,
	0.16093020141124725,
	0.24611230194568634,
	0.33791524171829224,
	0.44070982933044434,
	0.5626170039176941,
	0.7229568362236023,
	1.0,
}

// NF4Code returns the NF4 code of x (already divided by its block's
// absmax, so in [-1, 1]): bitsandbytes' dQuantizeNF4 decision tree, whose
// thresholds are the midpoints between neighbouring codes; a value equal to
// a threshold takes the lower code. NaN gives code 0, as in bitsandbytes.
func NF4Code(x float32) byte {
	if x > 0.03979014977812767 {
		if x > 0.3893125355243683 {
			if x > 0.6427869200706482 {
				if x > 0.8614784181118011 {
					return 0b1111
				}
				return 0b1110
			}
			if x > 0.5016634166240692 {
				return 0b1101
			}
			return 0b1100
		}
		if x > 0.2035212516784668 {
			if x > 0.2920137718319893 {
				return 0b1011
			}
			return 0b1010
		}
		if x > 0.1202552504837513 {
			return 0b1001
		}
		return 0b1000
	}
	if x > -0.33967943489551544 {
		if x > -0.13791173323988914 {
			if x > -0.045525018125772476 {
				return 0b0111
			}
			return 0b0110
		}
		if x > -0.23460740596055984 {
			return 0b0101
		}
		return 0b0100
	}
	if x > -0.6106329262256622 {
		if x > -0.4599952697753906 {
			return 0b0011
		}
		return 0b0010
	}
	if x > -0.8480964004993439 {
		return 0b0001
	}
	return 0b0000
}

// NF4Tensor is one weight in NF4: Packed holds two codes a byte (the even
// index in the high nibble), Absmax one scale per block of BlockSize values
// (the last block may be shorter), or, with double quantization, Absmax is
// nil and Double holds it.
type NF4Tensor struct {
	N      int    // number of values
	Packed []byte // ceil(N/2) bytes
	Absmax []float32
	Double *Blockwise8 // the absmax quantized to 8 bits (bnb_4bit_use_double_quant)
}

// QuantizeNF4 quantizes x in blocks of BlockSize as bitsandbytes'
// quantize_4bit(quant_type="nf4"); double quantizes the absmax as
// compress_statistics=True does (see QuantizeBlockwise8).
func QuantizeNF4(x []float32, double bool) *NF4Tensor {
	n := len(x)
	t := &NF4Tensor{N: n, Packed: make([]byte, (n+1)/2)}
	absmax := make([]float32, (n+BlockSize-1)/BlockSize)
	QuantizeNF4Into(x, t.Packed, absmax)
	if double {
		t.Double = QuantizeBlockwise8(absmax)
	} else {
		t.Absmax = absmax
	}
	return t
}

// QuantizeNF4Into is QuantizeNF4 without double quantization, writing the
// codes into packed (ceil(len(x)/2) bytes) and the scales into absmax (one
// per block): a caller can quantize straight into the memory that holds
// the result. It panics when a slice is too short.
func QuantizeNF4Into(x []float32, packed []byte, absmax []float32) {
	n := len(x)
	blocks := (n + BlockSize - 1) / BlockSize
	packed, absmax = packed[:(n+1)/2], absmax[:blocks]
	for b := range blocks {
		blk := x[b*BlockSize : min(n, (b+1)*BlockSize)]
		var m float32
		for _, v := range blk {
			m = max(m, float32(math.Abs(float64(v))))
		}
		absmax[b] = m
		// bitsandbytes multiplies by the reciprocal (a 0 block gives
		// 0·inf = NaN → code 0, which dequantizes to -1·0 = 0 as well).
		inv := 1 / m
		for i, v := range blk {
			j := b*BlockSize + i
			c := NF4Code(v * inv)
			if j%2 == 0 {
				packed[j/2] = c << 4
			} else {
				packed[j/2] |= c
			}
		}
	}
}

// Scales returns the absmax of every block (dequantizing the double
// quantization if there is one).
func (t *NF4Tensor) Scales() []float32 {
	if t.Double != nil {
		return t.Double.Dequantize()
	}
	return t.Absmax
}

// Dequantize writes the N values to out (len(out) >= N) and returns out[:N].
func (t *NF4Tensor) Dequantize(out []float32) []float32 {
	out = out[:t.N]
	scales := t.Scales()
	for j := range out {
		c := t.Packed[j/2]
		if j%2 == 0 {
			c >>= 4
		}
		out[j] = NF4[c&15] * scales[j/BlockSize]
	}
	return out
}

// Bytes returns the memory the tensor holds.
func (t *NF4Tensor) Bytes() int {
	n := len(t.Packed) + 4*len(t.Absmax)
	if t.Double != nil {
		n += t.Double.Bytes()
	}
	return n
}

// Validate checks that the slices agree with N.
func (t *NF4Tensor) Validate() error {
	if t.N < 0 || len(t.Packed) != (t.N+1)/2 {
		return fmt.Errorf("quant: nf4: %d packed bytes for %d values", len(t.Packed), t.N)
	}
	blocks := (t.N + BlockSize - 1) / BlockSize
	switch {
	case t.Double == nil && len(t.Absmax) != blocks:
		return fmt.Errorf("quant: nf4: %d absmax for %d blocks", len(t.Absmax), blocks)
	case t.Double != nil && t.Double.N != blocks:
		return fmt.Errorf("quant: nf4: %d double-quantized absmax for %d blocks", t.Double.N, blocks)
	case t.Double != nil:
		return t.Double.Validate()
	}
	return nil
}

var errShape = errors.New("quant: data does not match the shape")
