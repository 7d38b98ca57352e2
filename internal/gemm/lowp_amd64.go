//go:build amd64 && !purego

package gemm

import (
	"math"

	"golang.org/x/sys/cpu"

	"github.com/grpokit/grpokit/internal/quant"
)

//go:noescape
func decodeBF16AVX512(dst *float32, src *uint16, n int)

//go:noescape
func decodeInt8AVX512(dst *float32, src *int8, scale float32, n int)

//go:noescape
func decodeNF4AVX512(dst *float32, packed *byte, absmax *float32, blocks int, consts *uint32)

// nf4Consts is decodeNF4AVX512's table, interleaving indices and nibble mask.
var nf4Consts = func() (c [64]uint32) {
	for i, v := range quant.NF4 {
		c[i] = math.Float32bits(v)
	}
	for j := range 8 {
		c[16+2*j], c[16+2*j+1] = uint32(j), uint32(16+j)
		c[32+2*j], c[32+2*j+1] = uint32(8+j), uint32(24+j)
	}
	for j := range 16 {
		c[48+j] = 15
	}
	return c
}()

func init() {
	if !cpu.X86.HasAVX512F {
		return
	}
	decodeVec = lowpVec{
		bf16: func(dst []float32, src []uint16) int {
			n := len(dst) &^ 15
			if n > 0 {
				decodeBF16AVX512(&dst[0], &src[0], n)
			}
			return n
		},
		int8: func(dst []float32, src []int8, scale float32) int {
			n := len(dst) &^ 15
			if n > 0 {
				decodeInt8AVX512(&dst[0], &src[0], scale, n)
			}
			return n
		},
		nf4: func(dst []float32, packed []byte, absmax []float32) int {
			blocks := len(dst) / quant.BlockSize
			if blocks > 0 {
				_ = packed[blocks*quant.BlockSize/2-1]
				_ = absmax[blocks-1]
				decodeNF4AVX512(&dst[0], &packed[0], &absmax[0], blocks, &nf4Consts[0])
			}
			return blocks * quant.BlockSize
		},
	}
}
