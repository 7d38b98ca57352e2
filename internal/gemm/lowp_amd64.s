//go:build amd64 && !purego

#include "textflag.h"

// func decodeBF16AVX512(dst *float32, src *uint16, n int)
// dst[i] = float32 of bfloat16 src[i], i < n (n a multiple of 16).
TEXT ·decodeBF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ   bf16done
bf16loop:
	VPMOVZXWD (SI), Z0
	VPSLLD    $16, Z0, Z0
	VMOVUPS   Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       bf16loop
bf16done:
	VZEROUPPER
	RET

// func decodeInt8AVX512(dst *float32, src *int8, scale float32, n int)
// dst[i] = float32(src[i])·scale, i < n (n a multiple of 16).
TEXT ·decodeInt8AVX512(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	VBROADCASTSS scale+16(FP), Z1
	MOVQ         n+24(FP), CX
	SHRQ         $4, CX
	JZ           i8done
i8loop:
	VPMOVSXBD (SI), Z0
	VCVTDQ2PS Z0, Z0
	VMULPS    Z1, Z0, Z0
	VMOVUPS   Z0, (DI)
	ADDQ      $16, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       i8loop
i8done:
	VZEROUPPER
	RET

// func decodeNF4AVX512(dst *float32, packed *byte, absmax *float32, blocks int, consts *uint32)
// Decodes blocks whole blocks of 64 values (32 bytes, high nibble first):
// dst = NF4[code]·absmax[block]. consts: the NF4 table (16 float32), the
// interleaving indices 0,16,1,17,…,7,23 and 8,24,…,15,31, and sixteen 15s.
TEXT ·decodeNF4AVX512(SB), NOSPLIT, $0-40
	MOVQ      dst+0(FP), DI
	MOVQ      packed+8(FP), SI
	MOVQ      absmax+16(FP), DX
	MOVQ      blocks+24(FP), CX
	MOVQ      consts+32(FP), AX
	VMOVUPS   (AX), Z12
	VMOVDQU32 64(AX), Z13
	VMOVDQU32 128(AX), Z14
	VMOVDQU32 192(AX), Z15
	TESTQ     CX, CX
	JZ        nf4done
nf4loop:
	VBROADCASTSS (DX), Z0
	VMULPS       Z0, Z12, Z0 // the block's table: NF4[c]·absmax
	// bytes 0..15
	VPMOVZXBD (SI), Z1
	VPSRLD    $4, Z1, Z2
	VPANDD    Z15, Z1, Z3
	VPERMPS   Z0, Z2, Z4
	VPERMPS   Z0, Z3, Z5
	VMOVAPS   Z4, Z6
	VPERMT2PS Z5, Z13, Z6
	VPERMT2PS Z5, Z14, Z4
	VMOVUPS   Z6, (DI)
	VMOVUPS   Z4, 64(DI)
	// bytes 16..31
	VPMOVZXBD 16(SI), Z1
	VPSRLD    $4, Z1, Z2
	VPANDD    Z15, Z1, Z3
	VPERMPS   Z0, Z2, Z4
	VPERMPS   Z0, Z3, Z5
	VMOVAPS   Z4, Z6
	VPERMT2PS Z5, Z13, Z6
	VPERMT2PS Z5, Z14, Z4
	VMOVUPS   Z6, 128(DI)
	VMOVUPS   Z4, 192(DI)
	ADDQ      $32, SI
	ADDQ      $256, DI
	ADDQ      $4, DX
	DECQ      CX
	JNZ       nf4loop
nf4done:
	VZEROUPPER
	RET
