package gemm

// A product with many rows of A and at most one strided panel of columns
// (n ≤ stridedNR: a LoRA adapter's x·Aᵀ and dY·B at rank 16, over every
// token of a micro-batch) would, on the packed path, copy all of A into
// row panels to fill half of one column panel. The strided kernels read A's
// rows in place instead, against B packed once into a single nr-wide panel:
// each output is still one FMA per k in order within each k block, the
// blocks (kcMax) added to C as the packed path adds them, so the results
// are the packed path's bit for bit (TestNarrowKeepsBits).

// narrowMinRows is the fewest rows of A that take the narrow path (above
// the dot and strided paths' few-row products); a variable for tests.
var narrowMinRows = dotMaxRows + 1

// useNarrow reports whether the product of an m-row A and an n-column B
// goes to narrowOne: float32 A with contiguous rows, n within one strided
// panel (as wide as the packed kernels' panels, whose packer B goes through).
func useNarrow(kern *kernel, m, n int, a Mat) bool {
	return kern.strided != nil && kern.stridedNR == kern.nr && m >= narrowMinRows && n <= kern.stridedNR && a.CS == 1 && a.Q == nil
}

// narrowOne computes C = A[bi]·B[bi] on nt goroutines, splitting A's row
// tiles; the k blocks are the packed path's (depthBlock).
func narrowOne(kern *kernel, nt, m, n, k int, a, b Mat, bi int, c []float32) {
	aOff, bOff := a.start(bi), b.start(bi)
	nr := kern.stridedNR
	kc := depthBlock(k)
	ws := getWork()
	defer putWork(ws)
	// B as k×nr, zero-padded past its n columns: row p of the panel is at
	// ws.b[p*nr], whichever k block it falls in.
	ws.b = grow(ws.b, k*nr)
	for pc := 0; pc < k; pc += kc {
		kcur := min(kc, k-pc)
		packBMat(kern, ws.b[pc*nr:], b, bOff+pc*b.RS, kcur, n, 0, 1, &ws.q)
	}
	if 2*float64(m)*float64(n)*float64(k) < parallelMinFlops {
		nt = 1
	}
	mr := len(kern.strided) - 1
	tiles := (m + mr - 1) / mr
	runSplit(nt, tiles, func(t0, t1 int) {
		var ct [stridedTile]float32
		for t := t0; t < t1; t++ {
			i0 := t * mr
			rows := min(mr, m-i0)
			f := kern.strided[rows]
			for pc := 0; pc < k; pc += kc {
				kcur := min(kc, k-pc)
				accum := 0
				if pc > 0 {
					accum = 1
				}
				ap := &a.Data[aOff+i0*a.RS+pc]
				if n == nr {
					f(kcur, ap, a.RS, &ws.b[pc*nr], &c[i0*n], n, accum)
					continue
				}
				// A partial panel: the tile through scratch, added to C
				// as the kernel's own store adds (C + the block's sum).
				f(kcur, ap, a.RS, &ws.b[pc*nr], &ct[0], nr, 0)
				for i := range rows {
					dst := c[(i0+i)*n : (i0+i+1)*n]
					src := ct[i*nr : i*nr+n]
					if accum == 0 {
						copy(dst, src)
						continue
					}
					for j := range dst {
						dst[j] += src[j]
					}
				}
			}
		}
	})
}
