package gemm

// Few rows of A times a transposed B (x·Wᵀ with W stored [out, in], what a
// decode step runs for every layer) go to dot-product kernels that read A's
// and W's rows in place: packing W into column panels would cost one more
// pass over the weights than the product itself, and with a handful of rows
// there is nothing to amortise it over.

// dotKernel sets C[i*ldc+j] = Σ_{p<k} A[i*lda+p]·B[j*ldb+p] for i < rows
// (fixed per function) and j < dotNR; A's and B's rows are contiguous.
type dotKernel func(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)

// dotNR is how many rows of Bᵀ (columns of C) a dot kernel does; each
// family does up to len(kernel.dot)-1 rows of A (4 for AVX-512, 2 for AVX2).
const dotNR = 4

// dotMRMax bounds every family's rows per call (the scratch tile's size).
const dotMRMax = 4

// dotMaxRows is the most rows of A that take the dot-product path; above
// it packing B pays for itself. A variable so tests and benchmarks can move
// it.
var dotMaxRows = 32

// useDot reports whether the product of an m-row A and b goes to the dot
// kernels: B's columns must be contiguous along k (B transposed).
func useDot(kern *kernel, m int, b Mat) bool {
	return kern.dot != nil && m <= dotMaxRows && b.RS == 1
}

// dotOne computes C = A[bi]·B[bi] with the dot kernels on nt goroutines,
// splitting the columns. A's rows are copied to contiguous scratch unless
// they already are.
func dotOne(kern *kernel, nt, m, n, k int, a, b Mat, bi int, c []float32) {
	aOff, bOff := a.start(bi), b.start(bi)
	ad, lda := a.Data, a.RS
	var ws *work
	if a.CS != 1 {
		ws = getWork()
		defer putWork(ws)
		ws.a = grow(ws.a, m*k)
		for i := range m {
			for p := range k {
				ws.a[i*k+p] = a.Data[aOff+i*a.RS+p*a.CS]
			}
		}
		ad, aOff, lda = ws.a, 0, k
	}
	if 2*float64(m)*float64(n)*float64(k) < parallelMinFlops {
		nt = 1
	}
	tiles := (n + dotNR - 1) / dotNR
	runSplit(nt, tiles, func(t0, t1 int) {
		if b.Q != nil {
			dotLowp(kern, m, n, k, ad, aOff, lda, b.Q, bOff, b.CS, c, t0*dotNR, min(t1*dotNR, n))
			return
		}
		dotCols(kern, m, n, k, ad, aOff, lda, b.Data, bOff, b.CS, c, t0*dotNR, min(t1*dotNR, n))
	})
}

// dotCols computes C[:, j0:j1]. Each group of dotNR rows of Bᵀ stays in L1
// while every row block of A passes over it, so B is read from memory once.
func dotCols(kern *kernel, m, n, k int, ad []float32, aOff, lda int, bd []float32, bOff, ldb int, c []float32, j0, j1 int) {
	var edgeB []float32
	var edgeC [dotMRMax * dotNR]float32
	mr := len(kern.dot) - 1
	for j := j0; j < j1; j += dotNR {
		bp, lb := &bd[bOff+j*ldb], ldb
		ncols := min(dotNR, j1-j)
		if ncols < dotNR {
			// Last columns: a zero-padded copy so the kernel reads dotNR rows.
			edgeB = make([]float32, dotNR*k)
			for jj := range ncols {
				copy(edgeB[jj*k:(jj+1)*k], bd[bOff+(j+jj)*ldb:bOff+(j+jj)*ldb+k])
			}
			bp, lb = &edgeB[0], k
		}
		for i := 0; i < m; i += mr {
			rows := min(mr, m-i)
			f := kern.dot[rows]
			if ncols == dotNR {
				f(k, &ad[aOff+i*lda], lda, bp, lb, &c[i*n+j], n)
				continue
			}
			f(k, &ad[aOff+i*lda], lda, bp, lb, &edgeC[0], dotNR)
			for r := range rows {
				copy(c[(i+r)*n+j:(i+r)*n+j+ncols], edgeC[r*dotNR:r*dotNR+ncols])
			}
		}
	}
}
