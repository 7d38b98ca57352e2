package gemm

// A decode step at batch 17–32 multiplies a few rows of x by every weight
// matrix: x·Wᵀ with W stored [out, in]. The dot-product kernels (dot.go)
// read each W row once but pay a horizontal sum per output and stream all
// of x from L2 for every four rows of W; packing W for the 12×32 kernel
// costs a pass over the weights per call. The strided kernels compute the
// transpose instead, Cᵀ = W·xᵀ: W's rows are the tile's rows, read in place
// (one broadcast per element, 32 FMAs each), and xᵀ is one packed 32-wide
// panel (two 16-wide ones on AVX2) that stays in L2, so the product runs at
// the packed kernel's speed with no packing of the weights. Each 12×32
// (6×16) tile of Cᵀ goes through an L1 scratch tile into C. AVX2 takes the
// same rows as AVX-512 (17–32), although one 16-wide panel would serve
// 13–16 faster than its dot kernels: the row classes (RowClass) stay the
// same on both, and a decode batch of 16 can still shrink to 12 and 8 as
// its rows finish.

// stridedKernel sets C[i*ldc+j] (+)= Σ_{p<k} A[i*lda+p]·B[p*nr+j] for i <
// rows (fixed per function) and j < nr (the family's stridedNR: 32 for
// AVX-512, 16 for AVX2); A's rows are read in place, B is a packed nr-wide
// panel.
type stridedKernel func(k int, a *float32, lda int, b *float32, c *float32, ldc int, accum int)

// stridedMaxRows is the most rows of x the strided path takes: one 32-wide
// panel on AVX-512, two 16-wide ones on AVX2 (each tile of W, in L1, is
// multiplied by both before the next is read).
const stridedMaxRows = 32

// stridedMinRows, when positive, replaces the families' fewest rows of A
// for the strided path (kernel.stridedMin: below it most of a panel's
// lanes would multiply padding). Tests and benchmarks move it.
var stridedMinRows = 0

// stridedFrom is the fewest rows of A that take kern's strided path.
func stridedFrom(kern *kernel) int {
	if stridedMinRows > 0 {
		return stridedMinRows
	}
	return kern.stridedMin
}

// useStrided reports whether the product of an m-row A and b goes to the
// strided kernels: B must be a transposed float32 matrix (W's rows
// contiguous).
func useStrided(kern *kernel, m int, b Mat) bool {
	return kern.strided != nil && m >= stridedFrom(kern) && m <= stridedMaxRows && b.RS == 1 && b.Q == nil
}

// stridedOne computes C = A[bi]·B[bi] as (B[bi]ᵀ·A[bi]ᵀ)ᵀ on nt goroutines,
// splitting W's rows (C's columns).
func stridedOne(kern *kernel, nt, m, n, k int, a, b Mat, bi int, c []float32) {
	aOff, bOff := a.start(bi), b.start(bi)
	ws := getWork()
	defer putWork(ws)
	// xᵀ as k×nr panels: panel q holds B'[p][j] = A[q·nr+j][p], zero for
	// q·nr+j ≥ m.
	nr := kern.stridedNR
	panels := (m + nr - 1) / nr
	ws.b = grow(ws.b, panels*k*nr)
	for q := range panels {
		packB(kern.packT, ws.b[q*k*nr:], a.Data, aOff+q*nr*a.RS, a.CS, a.RS, k, min(nr, m-q*nr), nr, 0, 1)
	}
	if 2*float64(m)*float64(n)*float64(k) < parallelMinFlops {
		nt = 1
	}
	mr := len(kern.strided) - 1
	tiles := (n + mr - 1) / mr
	ldw := b.CS
	wd := b.Data
	runSplit(nt, tiles, func(t0, t1 int) {
		var ct [stridedTile]float32
		for t := t0; t < t1; t++ {
			j0 := t * mr
			rows := min(mr, n-j0)
			for q := range panels {
				mq := min(nr, m-q*nr)
				kern.strided[rows](k, &wd[bOff+j0*ldw], ldw, &ws.b[q*k*nr], &ct[0], nr, 0)
				dst := c[q*nr*n+j0:]
				if nr != 32 || !transposeFull12x32(&ct, rows, mq, dst, n) {
					transposeTile(&ct, nr, rows, mq, dst, n)
				}
			}
		}
	})
}

// stridedTile is the scratch tile's size: at least every family's mr·nr.
const stridedTile = 16 * 32

// transposeTile writes the rows×m tile ct (row stride nr) into c as its
// transpose: c[j*ldc+i] = ct[i*nr+j].
func transposeTile(ct *[stridedTile]float32, nr, rows, m int, c []float32, ldc int) {
	for j := range m {
		row := c[j*ldc : j*ldc+rows]
		for i := range row {
			row[i] = ct[i*nr+j]
		}
	}
}
