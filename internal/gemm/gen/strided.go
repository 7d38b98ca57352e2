package main

import (
	"bytes"
	"fmt"
	"strings"
)

// The strided kernels serve x·Wᵀ with few rows of x (a decode step at batch
// 17–32) computed as its transpose, W·xᵀ: W's rows are the tile's rows and
// are read in place (no packing pass over the weights), and xᵀ is packed in
// nr-wide panels. Each kernel computes, for i < rows and j < nr,
//
//	C[i*ldc + j] (+)= Σ_{p<k} A[i*lda + p] · B[p*nr + j]
//
// with the family's packed register tiling (isa: 12×32 for AVX-512, 6×16
// for AVX2, two vectors a row), B being a packed nr-wide panel.

// stridedName is the strided kernels' function name prefix for s.
func stridedName(s isa) string { return "kernT" + strings.TrimPrefix(s.name, "kern") }

const (
	// stridedUnroll k steps per loop iteration: 16 floats, one cache line
	// of each of A's rows, so one prefetch per row per iteration.
	stridedUnroll = 16
	// stridedPrefetch is how far ahead (bytes) A's rows are prefetched;
	// 0 turns it off.
	stridedPrefetch = 512
)

// emitStrided writes the strided kernel for one row count.
//
// Registers: CX k, AX lda (bytes), SI, BX, R12, R13 point at A's rows 0, 3,
// 6 and 9 (row i is base(i/3) + (i%3)·lda), DX B, DI C, R9 ldc (bytes),
// R10 accum, R11 loop counter. Accumulators V0..V(2·rows-1), B in the two
// registers after the largest tile's accumulators (Z24, Z25; Y12, Y13),
// broadcasts in the ones after those.
func emitStrided(w *bytes.Buffer, s isa, rows int) {
	p := func(format string, a ...any) { fmt.Fprintf(w, "\t"+format+"\n", a...) }
	z := func(i int) string { return fmt.Sprintf("%s%d", s.vec, i) }
	b0, b1 := z(2*s.mr), z(2*s.mr+1)
	vecBytes := 4 * s.lanes
	bcast := s.registers() - 2*s.mr - 2
	bases := []string{"SI", "BX", "R12", "R13"}
	nb := (rows + 2) / 3
	addr := func(i, disp int) string {
		b := bases[i/3]
		switch i % 3 {
		case 1:
			return fmt.Sprintf("%d(%s)(AX*1)", disp, b)
		case 2:
			return fmt.Sprintf("%d(%s)(AX*2)", disp, b)
		}
		return fmt.Sprintf("%d(%s)", disp, b)
	}
	fn := fmt.Sprintf("%s_%d", stridedName(s), rows)
	fmt.Fprintf(w, "\n// func %s(k int, a *float32, lda int, b *float32, c *float32, ldc int, accum int)\n", fn)
	fmt.Fprintf(w, "TEXT ·%s(SB), NOSPLIT, $0-56\n", fn)
	p("MOVQ k+0(FP), CX")
	p("MOVQ a+8(FP), SI")
	p("MOVQ lda+16(FP), AX")
	p("SHLQ $2, AX")
	p("MOVQ b+24(FP), DX")
	p("MOVQ c+32(FP), DI")
	p("MOVQ ldc+40(FP), R9")
	p("SHLQ $2, R9")
	p("MOVQ accum+48(FP), R10")
	for b := 1; b < nb; b++ {
		p("LEAQ (%s)(AX*2), %s", bases[b-1], bases[b])
		p("ADDQ AX, %s", bases[b])
	}
	for i := 0; i < 2*rows; i++ {
		p("VXORPS %s, %s, %s", z(i), z(i), z(i))
	}
	bcn := 0
	step := func(u int) {
		p("VMOVUPS %d(DX), %s", u*4*s.nr, b0)
		p("VMOVUPS %d(DX), %s", u*4*s.nr+vecBytes, b1)
		for i := 0; i < rows; i++ {
			r := z(2*s.mr + 2 + bcn%bcast)
			bcn++
			p("VBROADCASTSS %s, %s", addr(i, 4*u), r)
			p("VFMADD231PS %s, %s, %s", b0, r, z(2*i))
			p("VFMADD231PS %s, %s, %s", b1, r, z(2*i+1))
		}
	}
	advance := func(steps int) {
		for b := 0; b < nb; b++ {
			p("ADDQ $%d, %s", 4*steps, bases[b])
		}
		p("ADDQ $%d, DX", 4*s.nr*steps)
	}
	p("MOVQ CX, R11")
	p("SHRQ $%d, R11", log2(stridedUnroll))
	p("ANDQ $%d, CX", stridedUnroll-1)
	p("TESTQ R11, R11")
	p("JZ tail")
	fmt.Fprintf(w, "loop:\n")
	for u := 0; u < stridedUnroll; u++ {
		if stridedPrefetch > 0 && u < rows {
			p("PREFETCHT0 %s", addr(u, stridedPrefetch))
		}
		step(u)
	}
	advance(stridedUnroll)
	p("DECQ R11")
	p("JNZ loop")
	fmt.Fprintf(w, "tail:\n")
	p("TESTQ CX, CX")
	p("JZ store")
	fmt.Fprintf(w, "tailloop:\n")
	step(0)
	advance(1)
	p("DECQ CX")
	p("JNZ tailloop")
	fmt.Fprintf(w, "store:\n")
	p("TESTQ R10, R10")
	p("JZ overwrite")
	for i := 0; i < rows; i++ {
		p("VADDPS 0(DI), %s, %s", z(2*i), z(2*i))
		p("VADDPS %d(DI), %s, %s", vecBytes, z(2*i+1), z(2*i+1))
		p("VMOVUPS %s, 0(DI)", z(2*i))
		p("VMOVUPS %s, %d(DI)", z(2*i+1), vecBytes)
		p("ADDQ R9, DI")
	}
	p("VZEROUPPER")
	p("RET")
	fmt.Fprintf(w, "overwrite:\n")
	for i := 0; i < rows; i++ {
		p("VMOVUPS %s, 0(DI)", z(2*i))
		p("VMOVUPS %s, %d(DI)", z(2*i+1), vecBytes)
		p("ADDQ R9, DI")
	}
	p("VZEROUPPER")
	p("RET")
}

// writeStridedDecl writes the Go declarations of one family's strided kernels.
func writeStridedDecl(w *bytes.Buffer, s isa) {
	name := stridedName(s)
	fmt.Fprintf(w, "\n// %sRows[r] is the strided-A %d-column kernel for an r-row tile (W·xᵀ).\nvar %sRows = [...]stridedKernel{nil", name, s.nr, name)
	for r := 1; r <= s.mr; r++ {
		fmt.Fprintf(w, ", %s_%d", name, r)
	}
	fmt.Fprintf(w, "}\n")
	for r := 1; r <= s.mr; r++ {
		fmt.Fprintf(w, "\n//go:noescape\nfunc %s_%d(k int, a *float32, lda int, b *float32, c *float32, ldc int, accum int)\n", name, r)
	}
}
