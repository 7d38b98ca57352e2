//go:build amd64 && !purego

#include "textflag.h"

// func stepAVX512(p *Params, w, grad, mom1, mom2 *float32, n int, decay, scale bool)
//
// step (adamw.go) on 16 lanes at a time, for n a multiple of 16: the same
// float32 operations in the same order, each rounded on its own (no fused
// multiply-add; VSQRTPS and VDIVPS round correctly, as the scalar code's
// float64 square root rounded to float32 and its division do).
TEXT ·stepAVX512(SB), NOSPLIT, $0-50
	MOVQ p+0(FP), AX
	MOVQ w+8(FP), DI
	MOVQ grad+16(FP), SI
	MOVQ mom1+24(FP), R8
	MOVQ mom2+32(FP), R9
	MOVQ n+40(FP), CX
	MOVBQZX decay+48(FP), R10
	MOVBQZX scale+49(FP), R11
	VBROADCASTSS 0(AX), Z16  // LR
	VBROADCASTSS 4(AX), Z17  // Beta1
	VBROADCASTSS 8(AX), Z18  // OneMinusBeta1
	VBROADCASTSS 12(AX), Z19 // Beta2
	VBROADCASTSS 16(AX), Z20 // OneMinusBeta2
	VBROADCASTSS 20(AX), Z21 // Debias1
	VBROADCASTSS 24(AX), Z22 // Debias2
	VBROADCASTSS 28(AX), Z23 // Epsilon
	VBROADCASTSS 32(AX), Z24 // WeightDecay
	VBROADCASTSS 36(AX), Z25 // GradScale
	TESTQ CX, CX
	JZ done

loop:
	VMOVUPS (SI), Z0 // g
	TESTQ R11, R11
	JZ noscale
	VMULPS Z25, Z0, Z0 // g·GradScale

noscale:
	VMULPS (R8), Z17, Z1 // β₁·m1
	VMULPS Z18, Z0, Z2   // (1−β₁)·g
	VADDPS Z2, Z1, Z1    // a
	VMOVUPS Z1, (R8)
	VMULPS Z0, Z0, Z3    // g²
	VMULPS (R9), Z19, Z4 // β₂·m2
	VMULPS Z20, Z3, Z3   // (1−β₂)·g²
	VADDPS Z3, Z4, Z4    // b
	VMOVUPS Z4, (R9)
	VMULPS Z22, Z4, Z4   // b·d₂
	VSQRTPS Z4, Z4
	VADDPS Z23, Z4, Z4   // den
	VMULPS Z21, Z1, Z1   // a·d₁
	VMULPS Z16, Z1, Z1   // lr·(a·d₁)
	VDIVPS Z4, Z1, Z1    // s
	VMOVUPS (DI), Z5     // w
	TESTQ R10, R10
	JZ nodecay
	VMULPS Z24, Z5, Z6   // w·λ
	VMULPS Z16, Z6, Z6   // lr·(w·λ)
	VADDPS Z6, Z1, Z1    // s += …

nodecay:
	VSUBPS Z1, Z5, Z5 // w − s
	VMOVUPS Z5, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, R8
	ADDQ $64, R9
	SUBQ $16, CX
	JNZ loop

done:
	VZEROUPPER
	RET
