package gemm

import "unsafe"

// The portable kernel's tile: 4×4 keeps its 16 accumulators in registers.
const (
	portableMR = 4
	portableNR = 4
)

var portableRows = [...]asmKernel{nil, portable1, portable2, portable3, portable4}

func portable1(k int, a, b *float32, ldb int, c *float32, ldc int, accum int) {
	portableTile(1, k, a, b, ldb, c, ldc, accum)
}
func portable2(k int, a, b *float32, ldb int, c *float32, ldc int, accum int) {
	portableTile(2, k, a, b, ldb, c, ldc, accum)
}
func portable3(k int, a, b *float32, ldb int, c *float32, ldc int, accum int) {
	portableTile(3, k, a, b, ldb, c, ldc, accum)
}
func portable4(k int, a, b *float32, ldb int, c *float32, ldc int, accum int) {
	portableTile(4, k, a, b, ldb, c, ldc, accum)
}

// portableTile is the pure-Go micro-kernel (see asmKernel). It always
// computes four rows (the packed panel is zero padded) and stores rows.
func portableTile(rows, k int, a, b *float32, ldb int, c *float32, ldc int, accum int) {
	if k <= 0 {
		var zero [portableMR * portableNR]float32
		storeTile(rows, &zero, c, ldc, accum)
		return
	}
	as := unsafe.Slice(a, k*portableMR)
	bs := unsafe.Slice(b, (k-1)*ldb+portableNR)
	var c00, c01, c02, c03, c10, c11, c12, c13 float32
	var c20, c21, c22, c23, c30, c31, c32, c33 float32
	for p := 0; p < k; p++ {
		ap := as[p*portableMR : p*portableMR+4 : p*portableMR+4]
		bp := bs[p*ldb : p*ldb+4 : p*ldb+4]
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		a0 := ap[0]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		a1 := ap[1]
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		a2 := ap[2]
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		a3 := ap[3]
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	t := [portableMR * portableNR]float32{
		c00, c01, c02, c03, c10, c11, c12, c13,
		c20, c21, c22, c23, c30, c31, c32, c33,
	}
	storeTile(rows, &t, c, ldc, accum)
}

func storeTile(rows int, t *[portableMR * portableNR]float32, c *float32, ldc int, accum int) {
	cs := unsafe.Slice(c, (rows-1)*ldc+portableNR)
	for i := 0; i < rows; i++ {
		row := cs[i*ldc : i*ldc+portableNR : i*ldc+portableNR]
		src := t[i*portableNR : i*portableNR+portableNR]
		if accum != 0 {
			for j := range row {
				row[j] += src[j]
			}
		} else {
			copy(row, src)
		}
	}
}
