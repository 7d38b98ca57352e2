package gemm

import "unsafe"

// A decode step at batch 17–32 multiplies a few rows of x by every weight
// matrix: x·Wᵀ with W stored [out, in]. The dot-product kernels (dot.go)
// read each W row once but pay a horizontal sum per output and stream all
// of x from L2 for every four rows of W; packing W for the 12×32 kernel
// costs a pass over the weights per call. The strided kernels compute the
// transpose instead, Cᵀ = W·xᵀ: W's rows are the tile's rows, read in place
// (one broadcast per element, 32 FMAs each), and xᵀ is one packed 32-wide
// panel that stays in L2, so the product runs at the packed kernel's speed
// with no packing of the weights. Each 12×32 tile of Cᵀ goes through an L1
// scratch tile into C.

// stridedKernel sets C[i*ldc+j] (+)= Σ_{p<k} A[i*lda+p]·B[p*32+j] for i <
// rows (fixed per function) and j < 32; A's rows are read in place, B is a
// packed 32-wide panel.
type stridedKernel func(k int, a *float32, lda int, b *float32, c *float32, ldc int, accum int)

// stridedNR is the strided kernels' panel width: the most rows of x.
const stridedNR = 32

// stridedMinRows is the fewest rows of A that take the strided path (below
// it, most of the 32 lanes would multiply padding). A variable so tests and
// benchmarks can move it; above stridedNR nothing takes it.
var stridedMinRows = 17

// useStrided reports whether the product of an m-row A and b goes to the
// strided kernels: B must be a transposed float32 matrix (W's rows
// contiguous).
func useStrided(kern *kernel, m int, b Mat) bool {
	return kern.strided != nil && m >= stridedMinRows && m <= stridedNR && b.RS == 1 && b.Q == nil
}

// stridedOne computes C = A[bi]·B[bi] as (B[bi]ᵀ·A[bi]ᵀ)ᵀ on nt goroutines,
// splitting W's rows (C's columns).
func stridedOne(kern *kernel, nt, m, n, k int, a, b Mat, bi int, c []float32) {
	aOff, bOff := a.start(bi), b.start(bi)
	ws := getWork()
	defer putWork(ws)
	// xᵀ as a k×32 panel: B'[p][j] = A[j][p], zero for j ≥ m.
	ws.b = grow(ws.b, k*stridedNR)
	panel := ws.b
	packB(kern.packT, panel, a.Data, aOff, a.CS, a.RS, k, m, stridedNR, 0, 1)
	if 2*float64(m)*float64(n)*float64(k) < parallelMinFlops {
		nt = 1
	}
	mr := len(kern.strided) - 1
	tiles := (n + mr - 1) / mr
	ldw := b.CS
	wd := b.Data
	runSplit(nt, tiles, func(t0, t1 int) {
		var ct [16 * stridedNR]float32 // ≥ mr·32
		for t := t0; t < t1; t++ {
			j0 := t * mr
			rows := min(mr, n-j0)
			kern.strided[rows](k, &wd[bOff+j0*ldw], ldw, &panel[0], &ct[0], stridedNR, 0)
			if !transposeFull12x32(&ct, rows, m, c[j0:], n) {
				transposeTile(&ct, rows, m, c[j0:], n)
			}
		}
	})
}

// transposeTile writes the rows×m tile ct (row stride stridedNR) into c as
// its transpose: c[j*ldc+i] = ct[i*stridedNR+j].
func transposeTile(ct *[16 * stridedNR]float32, rows, m int, c []float32, ldc int) {
	_ = c[(m-1)*ldc+rows-1]
	p := unsafe.Pointer(&c[0])
	for j := range m {
		row := (*[16]float32)(unsafe.Add(p, 4*j*ldc))
		for i := range rows {
			row[i] = ct[i*stridedNR+j]
		}
	}
}
