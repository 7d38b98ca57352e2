//go:build amd64 && !purego

#include "textflag.h"

// func packT32AVX512(kc int, src *float32, idx *int32, dst *float32)
// For q < kc and j < 32: dst[q*32+j] = src[idx[j%16] + (j/16)*idx[16] + q]
// where idx[j] = j*cs for j < 16 and idx[16] = 16*cs: a 32-column panel of
// a transposed B gathered one packed row at a time.
TEXT ·packT32AVX512(SB), NOSPLIT, $0-32
	MOVQ kc+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ idx+16(FP), DX
	MOVQ dst+24(FP), DI
	VMOVDQU32 (DX), Z0
	MOVLQSX 64(DX), AX
	SHLQ $2, AX
	LEAQ (SI)(AX*1), BX
loop:
	KXNORW K1, K1, K1
	VGATHERDPS (SI)(Z0*4), K1, Z1
	KXNORW K2, K2, K2
	VGATHERDPS (BX)(Z0*4), K2, Z2
	VMOVUPS Z1, (DI)
	VMOVUPS Z2, 64(DI)
	ADDQ $4, SI
	ADDQ $4, BX
	ADDQ $128, DI
	DECQ CX
	JNZ loop
	VZEROUPPER
	RET

// func packT16AVX2(kc int, src *float32, idx *int32, dst *float32)
// The AVX2 version for 16-column panels: idx[j] = j*cs for j < 8 and
// idx[8] = 8*cs.
TEXT ·packT16AVX2(SB), NOSPLIT, $0-32
	MOVQ kc+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ idx+16(FP), DX
	MOVQ dst+24(FP), DI
	VMOVDQU (DX), Y0
	MOVLQSX 32(DX), AX
	SHLQ $2, AX
	LEAQ (SI)(AX*1), BX
loop:
	VPCMPEQD Y3, Y3, Y3
	VGATHERDPS Y3, (SI)(Y0*4), Y1
	VPCMPEQD Y4, Y4, Y4
	VGATHERDPS Y4, (BX)(Y0*4), Y2
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	ADDQ $4, SI
	ADDQ $4, BX
	ADDQ $64, DI
	DECQ CX
	JNZ loop
	VZEROUPPER
	RET
