package gemm

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/grpokit/grpokit/internal/fork"
)

// Mat is a strided view of a batch of float32 matrices: element (i, j) of
// matrix b is Data[Off + b*BS + i*RS + j*CS], or Data[Off + Batch[b] +
// i*RS + j*CS] when Batch is not nil (several batch axes that no single
// stride walks). Any layout a DotGeneral operand reduces to (row-major,
// transposed, batch axes anywhere) is one Mat.
// When Q is set the values are Q's (Data is not used): a low-precision
// weight decoded while its panels are packed (see Lowp).
type Mat struct {
	Data            []float32
	Off, BS, RS, CS int
	Batch           []int // optional offset of each matrix; overrides BS
	Q               *Lowp // optional low-precision values instead of Data
}

// size returns how many values the view's storage holds.
func (v Mat) size() int {
	if v.Q != nil {
		return v.Q.Len
	}
	return len(v.Data)
}

// packBMat packs column panels [t0, t1) of B (see packB), decoding a
// low-precision B; tmp is scratch for the decoding.
func packBMat(kern *kernel, dst []float32, b Mat, src, kc, n, t0, t1 int, tmp *[]float32) {
	if b.Q != nil {
		packBLowp(kern.packT, dst, b.Q, src, b.RS, b.CS, kc, n, kern.nr, t0, t1, tmp)
		return
	}
	packB(kern.packT, dst, b.Data, src, b.RS, b.CS, kc, n, kern.nr, t0, t1)
}

// decodeA returns a dense float32 copy of a low-precision A (rare: weights
// are the right operand of the model's products).
func decodeA(a Mat, batch, m, k int) Mat {
	out := make([]float32, batch*m*k)
	for b := range batch {
		for i := range m {
			row := out[(b*m+i)*k : (b*m+i+1)*k]
			if a.CS == 1 {
				a.Q.Decode(row, a.start(b)+i*a.RS)
				continue
			}
			for p := range row {
				a.Q.Decode(row[p:p+1], a.start(b)+i*a.RS+p*a.CS)
			}
		}
	}
	return Mat{Data: out, BS: m * k, RS: k, CS: 1}
}

// start returns the offset of matrix b.
func (v Mat) start(b int) int {
	if v.Batch != nil {
		return v.Off + v.Batch[b]
	}
	return v.Off + b*v.BS
}

// Blocking parameters (elements). kcMax bounds the depth of one pass so the
// packed A block and a B panel stay in L2; mc rows of A are reused across nc
// columns of B. Variables, not constants, so benchmarks can tune them.
// kcMax alone fixes each output's summation order (the kernels sum one
// depth block in registers, then add it to C); mc, nc, the loop order and
// the packing of B only change which tile is computed when.
var (
	kcMax = 640
	mcMax = 144
	ncMax = 1024
	// rowsOuter makes cols keep one row tile of A (mr×kc, in L1) across
	// all the B panels of an nc block (in L2) instead of one B panel
	// across the row tiles of an mc block.
	rowsOuter = false
)

func init() { tuneForL2(l2Bytes()) }

// tuneForL2 sets the blocking for a core whose L2 holds l2 bytes (0:
// unknown). With 2 MiB or more (Intel's server cores since Sapphire
// Rapids) the row tile of A stays in L1 and the B panels of an nc = 384
// column block come from L2 (under 1 MiB at kc ≤ 640), packed rather than
// read in place when more than 768 rows of A share them; the defaults suit
// 1 MiB L2s (AMD Zen 4/5).
func tuneForL2(l2 int) {
	if l2 >= 2<<20 {
		rowsOuter, ncMax, inPlaceMaxRows, inPlaceMaxStride = true, 384, 768, 0
	}
}

// parallelMinFlops is the smallest product split across goroutines: below
// it (about 5 µs of work), the hand-off to a helper costs more than it
// saves. It splits a decode step's weight products at batch 1 (SmolLM2's
// q projection: 0.66 MFLOP), which read memory faster on two cores.
const parallelMinFlops = 1 << 18

var threads atomic.Int32

// SetThreads sets how many goroutines one Gemm call may use (n < 1 means
// runtime.GOMAXPROCS(0), the default) and returns the previous setting.
func SetThreads(n int) int { return int(threads.Swap(int32(n))) }

func numThreads() int {
	if n := int(threads.Load()); n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// Gemm sets C[b] = A[b]·B[b] for every b < batch, where A[b] is m×k, B[b] is
// k×n and c holds the dense row-major result [batch][m][n]; every element of
// c[:batch*m*n] is written. It panics if a view reaches outside its Data or
// c is too short (a programming error, as with a slice index).
func Gemm(batch, m, n, k int, a, b Mat, c []float32) {
	if batch < 0 || m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative size batch=%d m=%d n=%d k=%d", batch, m, n, k))
	}
	if batch == 0 || m == 0 || n == 0 {
		return
	}
	c = c[:batch*m*n]
	if k == 0 {
		clear(c)
		return
	}
	checkView("A", a, batch, m, k)
	checkView("B", b, batch, k, n)
	for _, v := range []Mat{a, b} {
		if v.Q != nil {
			if err := v.Q.Validate(); err != nil {
				panic(err.Error())
			}
		}
	}
	if a.Q != nil {
		a = decodeA(a, batch, m, k)
	}
	kern := kernels.Load()
	nt := numThreads()
	if useStrided(kern, m, b) {
		for bi := 0; bi < batch; bi++ {
			stridedOne(kern, nt, m, n, k, a, b, bi, c[bi*m*n:(bi+1)*m*n])
		}
		return
	}
	if useDot(kern, m, b) {
		if 2*float64(batch)*float64(m)*float64(n)*float64(k) < parallelMinFlops {
			nt = 1
		}
		if batch > 1 && batch >= nt {
			runSplit(nt, batch, func(b0, b1 int) {
				for bi := b0; bi < b1; bi++ {
					dotOne(kern, 1, m, n, k, a, b, bi, c[bi*m*n:(bi+1)*m*n])
				}
			})
			return
		}
		for bi := 0; bi < batch; bi++ {
			dotOne(kern, nt, m, n, k, a, b, bi, c[bi*m*n:(bi+1)*m*n])
		}
		return
	}
	if useNarrow(kern, m, n, a) {
		for bi := 0; bi < batch; bi++ {
			narrowOne(kern, nt, m, n, k, a, b, bi, c[bi*m*n:(bi+1)*m*n])
		}
		return
	}
	flops := 2 * float64(batch) * float64(m) * float64(n) * float64(k)
	if nt <= 1 || flops < parallelMinFlops {
		ws := getWork()
		for bi := 0; bi < batch; bi++ {
			one(kern, ws, 1, m, n, k, a, b, bi, c[bi*m*n:(bi+1)*m*n])
		}
		putWork(ws)
		return
	}
	// Many small products (attention heads): give each goroutine whole ones.
	if batch >= 4*nt || batch%nt == 0 {
		parallel(nt, func(t int) {
			ws := getWork()
			for bi := t * batch / nt; bi < (t+1)*batch/nt; bi++ {
				one(kern, ws, 1, m, n, k, a, b, bi, c[bi*m*n:(bi+1)*m*n])
			}
			putWork(ws)
		})
		return
	}
	ws := getWork()
	for bi := 0; bi < batch; bi++ {
		one(kern, ws, nt, m, n, k, a, b, bi, c[bi*m*n:(bi+1)*m*n])
	}
	putWork(ws)
}

// checkView panics unless every element of the rows×cols matrices of v lies
// inside v.Data, so the kernels' unchecked reads stay in bounds.
func checkView(name string, v Mat, batch, rows, cols int) {
	if v.Batch != nil && len(v.Batch) < batch {
		panic(fmt.Sprintf("gemm: %s has %d batch offsets, want %d", name, len(v.Batch), batch))
	}
	lo, hi := v.size(), -1
	for b := range batch {
		l, h := v.start(b), v.start(b)
		for _, d := range [][2]int{{v.RS, rows}, {v.CS, cols}} {
			if d[0] < 0 {
				l += d[0] * (d[1] - 1)
			} else {
				h += d[0] * (d[1] - 1)
			}
		}
		lo, hi = min(lo, l), max(hi, h)
	}
	if lo < 0 || hi >= v.size() {
		panic(fmt.Sprintf("gemm: %s view %+v of %d×%d×%d reaches [%d, %d], outside its %d elements",
			name, [4]int{v.Off, v.BS, v.RS, v.CS}, batch, rows, cols, lo, hi, v.size()))
	}
}

// parallel runs f(0..n-1) on n goroutines (the caller's is one of them),
// on fork's lingering helpers: a decode step's products are too short for a
// goroutine start and a thread wake-up each.
func parallel(n int, f func(t int)) { fork.Run(n, f) }

// one computes C = A[bi]·B[bi] for one matrix of the batch on nt goroutines.
func one(kern *kernel, ws *work, nt, m, n, k int, a, b Mat, bi int, c []float32) {
	mr, nr := kern.mr, kern.nr
	aOff, bOff := a.start(bi), b.start(bi)
	panelsM := (m + mr - 1) / mr
	kc := depthBlock(k)
	if nt > 1 && 2*float64(m)*float64(n)*float64(k) < parallelMinFlops {
		nt = 1
	}
	// Split the columns unless there are too few of them; then the rows.
	tilesN := (n + nr - 1) / nr
	splitN := tilesN >= 2*nt || tilesN >= panelsM
	ws.a = grow(ws.a, panelsM*mr*kc)
	inPlaceB := readInPlace(b, m)
	if !splitN && !inPlaceB {
		ws.b = grow(ws.b, tilesN*nr*kc)
	}
	for pc := 0; pc < k; pc += kc {
		kcur := min(kc, k-pc)
		accum := 0
		if pc > 0 {
			accum = 1
		}
		ap, bp := ws.a, ws.b
		aSrc := aOff + pc*a.CS
		bSrc := bOff + pc*b.RS
		// Pack A (and B when shared) once, split by panels.
		runSplit(nt, panelsM, func(p0, p1 int) {
			packA(ap, a.Data, aSrc, a.RS, a.CS, m, kcur, mr, p0, p1)
		})
		if !splitN && !inPlaceB {
			runSplit(nt, tilesN, func(p0, p1 int) {
				w := ws
				if p0 > 0 {
					w = getWork()
					defer putWork(w)
				}
				packBMat(kern, bp, b, bSrc, kcur, n, p0, p1, &w.q)
			})
		}
		if splitN {
			runSplit(nt, tilesN, func(t0, t1 int) {
				w := ws
				if t0 > 0 {
					w = getWork()
					defer putWork(w)
				}
				cols(kern, w, ap, b, bSrc, inPlaceB, kcur, m, n, t0*nr, min(t1*nr, n), c, accum)
			})
		} else {
			runSplit(nt, panelsM, func(p0, p1 int) {
				w := ws
				if p0 > 0 {
					w = getWork()
					defer putWork(w)
				}
				rowsRange(kern, w, ap, bp, b, bSrc, inPlaceB, kcur, m, n, p0, p1, c, accum)
			})
		}
	}
}

// depthBlock is the depth of the k blocks a product of depth k is summed
// in (the last may be shorter): even blocks of at most kcMax, since a short
// last block wastes a whole pass over C. It fixes each output's summation
// order, so every path that keeps the packed path's bits uses it.
func depthBlock(k int) int {
	nkb := (k + kcMax - 1) / kcMax
	return (k + nkb - 1) / nkb
}

// runSplit splits [0, count) into nt contiguous ranges and runs f on each.
func runSplit(nt, count int, f func(lo, hi int)) {
	nt = min(nt, count)
	if nt <= 1 {
		f(0, count)
		return
	}
	parallel(nt, func(t int) { f(t*count/nt, (t+1)*count/nt) })
}

// B with contiguous rows is read in place, without packing, when few rows
// of A share each panel (packing would cost as much as the product) or its
// rows are short enough (≤ inPlaceMaxStride) that walking down a panel does
// not thrash the cache sets and TLB; at the LM head's shape a 49152-wide B
// read in place runs 3–4× slower than packed.
var (
	inPlaceMaxRows   = 96
	inPlaceMaxStride = 4096
)

// readInPlace reports whether the kernels read B directly.
func readInPlace(b Mat, m int) bool {
	return b.Q == nil && b.CS == 1 && (m <= inPlaceMaxRows || b.RS <= inPlaceMaxStride)
}

// cols computes C[:, j0:j1] from the packed A (all rows) and B. B is read in
// place when its rows are contiguous, else packed nc columns at a time.
func cols(kern *kernel, ws *work, ap []float32, b Mat, bSrc int, inPlace bool, kc, m, n, j0, j1 int, c []float32, accum int) {
	mr, nr := kern.mr, kern.nr
	for jc := j0; jc < j1; jc += ncMax {
		ncur := min(ncMax, j1-jc)
		var bp []float32
		if !inPlace {
			tiles := (ncur + nr - 1) / nr
			ws.b = grow(ws.b, tiles*nr*kc)
			bp = ws.b
			packBMat(kern, bp, b, bSrc+jc*b.CS, kc, ncur, 0, tiles, &ws.q)
		}
		if rowsOuter {
			// The edge panel (if any) once for all row tiles.
			var edge *float32
			if inPlace && ncur%nr != 0 {
				jr := ncur - ncur%nr
				edge, _ = panelB(kern, ws, b, bp, bSrc, inPlace, kc, jr, jc+jr, ncur-jr)
			}
			for i := 0; i < m; i += mr {
				aPanel := &ap[(i/mr)*mr*kc]
				rows := min(mr, m-i)
				for jr := 0; jr < ncur; jr += nr {
					ncols := min(nr, ncur-jr)
					var bPanel *float32
					ldb := nr
					switch {
					case !inPlace:
						bPanel = &bp[jr*kc]
					case ncols < nr:
						bPanel = edge
					default:
						bPanel, ldb = &b.Data[bSrc+jc+jr], b.RS
					}
					tile(kern, ws, rows, ncols, kc, aPanel, bPanel, ldb, c, i*n+jc+jr, n, accum)
				}
			}
			continue
		}
		for ic := 0; ic < m; ic += mcMax {
			mcur := min(mcMax, m-ic)
			for jr := 0; jr < ncur; jr += nr {
				ncols := min(nr, ncur-jr)
				bPanel, ldb := panelB(kern, ws, b, bp, bSrc, inPlace, kc, jr, jc+jr, ncols)
				for ir := 0; ir < mcur; ir += mr {
					i := ic + ir
					tile(kern, ws, min(mr, m-i), ncols, kc, &ap[(i/mr)*mr*kc], bPanel, ldb, c, i*n+jc+jr, n, accum)
				}
			}
		}
	}
}

// rowsRange computes row panels [p0, p1) of C over all columns.
func rowsRange(kern *kernel, ws *work, ap, bp []float32, b Mat, bSrc int, inPlace bool, kc, m, n, p0, p1 int, c []float32, accum int) {
	mr, nr := kern.mr, kern.nr
	for jr := 0; jr < n; jr += nr {
		ncols := min(nr, n-jr)
		bPanel, ldb := panelB(kern, ws, b, bp, bSrc, inPlace, kc, jr, jr, ncols)
		for p := p0; p < p1; p++ {
			i := p * mr
			tile(kern, ws, min(mr, m-i), ncols, kc, &ap[p*mr*kc], bPanel, ldb, c, i*n+jr, n, accum)
		}
	}
}

// panelB returns the B panel for ncols columns starting at column col of
// B (offset j in the packed bp) and its row stride: the packed panel, B
// itself when read in place, or for a partial panel in place its zero-padded
// copy (edgePanel).
func panelB(kern *kernel, ws *work, b Mat, bp []float32, bSrc int, inPlace bool, kc, j, col, ncols int) (*float32, int) {
	switch {
	case !inPlace:
		return &bp[j*kc], kern.nr
	case ncols < kern.nr:
		return edgePanel(kern, ws, b, bSrc+col*b.CS, kc, ncols), kern.nr
	}
	return &b.Data[bSrc+col], b.RS
}

// edgePanel packs the last, partial column panel of a B read in place
// (ncols < nr columns from bEdge) into ws.edge, zero padded, once for all
// the row tiles that use it, so the kernels never read past B.
func edgePanel(kern *kernel, ws *work, b Mat, bEdge, kc, ncols int) *float32 {
	ws.edge = grow(ws.edge, kc*kern.nr)
	packB(kern.packT, ws.edge, b.Data, bEdge, b.RS, b.CS, kc, ncols, kern.nr, 0, 1)
	return &ws.edge[0]
}

// tile runs the kernel on one rows×ncols tile of C at c[cOff]. A partial
// column tile (ncols < nr) has a zero-padded packed B panel (ldb = nr) and
// goes through a scratch C tile, so the kernels never touch memory past C.
func tile(kern *kernel, ws *work, rows, ncols, kc int, aPanel, bPanel *float32, ldb int, c []float32, cOff, ldc, accum int) {
	f := kern.rows[rows]
	nr := kern.nr
	if ncols == nr {
		f(kc, aPanel, bPanel, ldb, &c[cOff], ldc, accum)
		return
	}
	ws.ct = grow(ws.ct, kern.mr*nr)
	et := ws.ct
	f(kc, aPanel, bPanel, ldb, &et[0], nr, 0)
	for i := 0; i < rows; i++ {
		dst := c[cOff+i*ldc : cOff+i*ldc+ncols]
		src := et[i*nr : i*nr+ncols]
		if accum != 0 {
			for j := range dst {
				dst[j] += src[j]
			}
		} else {
			copy(dst, src)
		}
	}
}

// work is one goroutine's scratch space, recycled through a pool.
type work struct{ a, b, edge, ct, q []float32 }

var workPool = sync.Pool{New: func() any { return new(work) }}

func getWork() *work  { return workPool.Get().(*work) }
func putWork(w *work) { workPool.Put(w) }

// grow returns s resliced to n elements, reallocating (64-byte aligned) if
// its capacity is short. Contents are not kept.
func grow(s []float32, n int) []float32 {
	if cap(s) >= n {
		return s[:n]
	}
	buf := make([]float32, n+16)
	off := 0
	if r := uintptr(unsafe.Pointer(&buf[0])) % 64; r != 0 {
		off = int(64-r) / 4
	}
	return buf[off : off+n : off+n]
}
