package main

import (
	"bytes"
	"fmt"
)

// dotNR is the number of rows of Bᵀ (columns of C) every dot kernel does.
const dotNR = 4

// dotISA describes one family of dot-product kernels.
type dotISA struct {
	name  string // function name prefix
	mr    int    // most rows of A per call
	vec   string // "Z" or "Y"
	lanes int    // float32 lanes per register
}

var dotISAs = []dotISA{
	{name: "dotAVX512", mr: 4, vec: "Z", lanes: 16},
	{name: "dotAVX2", mr: 2, vec: "Y", lanes: 8},
}

// prefetchNext makes the dot kernels prefetch the next dotNR rows of Bᵀ
// (the next call's) while they work through theirs.
var prefetchNext = true

// emitDot writes the dot-product kernel for rows ≤ s.mr rows of A:
//
//	C[i*ldc + j] = Σ_{p<k} A[i*lda + p] · B[j*ldb + p]   (i < rows, j < dotNR)
//
// It reads A's rows and Bᵀ's rows (a transposed B stored [n, k], the
// model's x·Wᵀ) in place, one vector of k at a time, with a masked last
// step, so nothing is packed: for a few rows of A (decode) packing B would
// cost an extra pass over the weights. Each accumulator is reduced across
// its lanes at the end.
//
// Registers: CX k, SI A, R8 lda, R12 3*lda, DX B, R9 ldb, R13 3*ldb, R14
// the same k of the next dotNR rows of B (prefetched), DI C, R10 ldc
// (bytes). Accumulators V0..V(4*rows-1) (row i, column j in V(4i+j)); A
// vectors and B vectors follow (AVX-512: from Z16 and Z20; AVX2: from Y8
// and Y10, with the tail mask in Y15).
func emitDot(w *bytes.Buffer, s dotISA, rows int) {
	p := func(format string, a ...any) { fmt.Fprintf(w, "\t"+format+"\n", a...) }
	v := func(i int) string { return fmt.Sprintf("%s%d", s.vec, i) }
	aReg, bReg := 16, 20
	if s.vec == "Y" {
		aReg, bReg = 8, 10
	}
	vb := s.lanes * 4 // bytes per vector
	fn := fmt.Sprintf("%s_%d", s.name, rows)
	fmt.Fprintf(w, "\n// func %s(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)\n", fn)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $0-56\n", fn)
	p("MOVQ k+0(FP), CX")
	p("MOVQ a+8(FP), SI")
	p("MOVQ lda+16(FP), R8")
	p("SHLQ $2, R8")
	p("LEAQ (R8)(R8*2), R12")
	p("MOVQ b+24(FP), DX")
	p("MOVQ ldb+32(FP), R9")
	p("SHLQ $2, R9")
	p("LEAQ (R9)(R9*2), R13")
	p("LEAQ (DX)(R9*4), R14")
	p("MOVQ c+40(FP), DI")
	p("MOVQ ldc+48(FP), R10")
	p("SHLQ $2, R10")
	acc := func(i, j int) int { return i*dotNR + j }
	for i := 0; i < rows; i++ {
		for j := 0; j < dotNR; j++ {
			p("VXORPS %s, %s, %s", v(acc(i, j)), v(acc(i, j)), v(acc(i, j)))
		}
	}
	// row returns the address of row r of the matrix at base with stride
	// registers s1 (1×) and s3 (3×), plus off bytes.
	row := func(base, s1, s3 string, r, off int) string {
		o := ""
		if off != 0 {
			o = fmt.Sprint(off)
		}
		switch r {
		case 0:
			return fmt.Sprintf("%s(%s)", o, base)
		case 1:
			return fmt.Sprintf("%s(%s)(%s*1)", o, base, s1)
		case 2:
			return fmt.Sprintf("%s(%s)(%s*2)", o, base, s1)
		}
		return fmt.Sprintf("%s(%s)(%s*1)", o, base, s3)
	}
	load := func(addr string, dst int, mask bool) {
		switch {
		case !mask:
			p("VMOVUPS %s, %s", addr, v(dst))
		case s.vec == "Z":
			p("VMOVUPS.Z %s, K1, %s", addr, v(dst))
		default:
			p("VMASKMOVPS %s, Y15, %s", addr, v(dst))
		}
	}
	// step does one vector of k (masked when mask is set) at byte offset off.
	step := func(off int, mask bool) {
		for j := 0; j < dotNR; j++ {
			load(row("DX", "R9", "R13", j, off), bReg+j, mask)
		}
		for i := 0; i < rows; i++ {
			load(row("SI", "R8", "R12", i, off), aReg+i, mask)
			for j := 0; j < dotNR; j++ {
				p("VFMADD231PS %s, %s, %s", v(bReg+j), v(aReg+i), v(acc(i, j)))
			}
		}
	}
	// Main loop: two vectors of k per iteration, then one, then a masked one.
	p("MOVQ CX, R11")
	p("SHRQ $%d, R11", log2(2*s.lanes))
	p("JZ half")
	fmt.Fprintf(w, "loop:\n")
	for u := 0; u < 2; u++ {
		step(u*vb, false)
		if prefetchNext {
			for j := 0; j < dotNR; j++ {
				for off := u * vb; off < (u+1)*vb; off += 64 {
					p("PREFETCHT0 %s", row("R14", "R9", "R13", j, off))
				}
			}
		}
	}
	p("ADDQ $%d, SI", 2*vb)
	p("ADDQ $%d, DX", 2*vb)
	p("ADDQ $%d, R14", 2*vb)
	p("DECQ R11")
	p("JNZ loop")
	fmt.Fprintf(w, "half:\n")
	p("TESTQ $%d, CX", s.lanes)
	p("JZ masked")
	step(0, false)
	p("ADDQ $%d, SI", vb)
	p("ADDQ $%d, DX", vb)
	fmt.Fprintf(w, "masked:\n")
	p("ANDQ $%d, CX", s.lanes-1)
	p("JZ reduce")
	if s.vec == "Z" {
		p("MOVQ $1, R11")
		p("SHLQ CX, R11")
		p("DECQ R11")
		p("KMOVW R11, K1")
	} else {
		// Lanes below k%8 on: iota < broadcast(k%8).
		p("MOVQ CX, X14")
		p("VPBROADCASTD X14, Y14")
		p("VMOVDQU dotIota<>(SB), Y15")
		p("VPCMPGTD Y15, Y14, Y15")
	}
	step(0, true)
	fmt.Fprintf(w, "reduce:\n")
	// Row i's four sums end in X(4i): (AVX-512: halve each accumulator to
	// 256 bits,) two rounds of horizontal adds and a final 128-bit add.
	for i := 0; i < rows; i++ {
		if s.vec == "Z" {
			for j := 0; j < dotNR; j++ {
				a := acc(i, j)
				p("VEXTRACTF64X4 $1, Z%d, Y24", a)
				p("VADDPS Y24, Y%d, Y%d", a, a)
			}
		}
		a := acc(i, 0)
		p("VHADDPS Y%d, Y%d, Y%d", a+1, a, a)
		p("VHADDPS Y%d, Y%d, Y%d", a+3, a+2, a+2)
		p("VHADDPS Y%d, Y%d, Y%d", a+2, a, a)
		p("VEXTRACTF128 $1, Y%d, X%d", a, a+1)
		p("VADDPS X%d, X%d, X%d", a+1, a, a)
		p("VMOVUPS X%d, (DI)", a)
		p("ADDQ R10, DI")
	}
	p("VZEROUPPER")
	p("RET")
}

// emitDotData writes the constant the AVX2 tail mask is built from.
func emitDotData(w *bytes.Buffer) {
	fmt.Fprintf(w, "\n// dotIota is 0, 1, ..., 7: the AVX2 dot kernels' tail mask is iota < k%%8.\n")
	for i := 0; i < 8; i++ {
		fmt.Fprintf(w, "DATA dotIota<>+%d(SB)/4, $%d\n", 4*i, i)
	}
	fmt.Fprintf(w, "GLOBL dotIota<>(SB), RODATA|NOPTR, $32\n")
}

// writeDotDecl writes the Go declarations of the dot kernels.
func writeDotDecl(w *bytes.Buffer) {
	for _, s := range dotISAs {
		fmt.Fprintf(w, "\n// %sRows[r] is the %d-column dot-product kernel for r rows.\nvar %sRows = [...]dotKernel{nil", s.name, dotNR, s.name)
		for r := 1; r <= s.mr; r++ {
			fmt.Fprintf(w, ", %s_%d", s.name, r)
		}
		fmt.Fprintf(w, "}\n")
		for r := 1; r <= s.mr; r++ {
			fmt.Fprintf(w, "\n//go:noescape\nfunc %s_%d(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)\n", s.name, r)
		}
	}
}
