package gemm

// packBlock is how many rows of a transposed B are packed per sweep over a
// panel's columns.
const packBlock = 16

// packA copies row panels [p0, p1) of the m×kc block of A that starts at
// src (row stride rs, column stride cs) into dst: panel p holds rows
// p*mr..p*mr+mr-1 as dst[p*mr*kc + q*mr + i] = A[p*mr+i][q], with rows past
// m set to zero so the kernels can always read mr of them.
func packA(dst, data []float32, src, rs, cs, m, kc, mr, p0, p1 int) {
	for p := p0; p < p1; p++ {
		rows := min(mr, m-p*mr)
		panel := dst[p*mr*kc : (p+1)*mr*kc]
		base := src + p*mr*rs
		switch {
		case cs == 1:
			for i := 0; i < rows; i++ {
				row := data[base+i*rs : base+i*rs+kc]
				for q, v := range row {
					panel[q*mr+i] = v
				}
			}
		case rs == 1:
			for q := 0; q < kc; q++ {
				copy(panel[q*mr:q*mr+rows], data[base+q*cs:base+q*cs+rows])
			}
		default:
			for i := 0; i < rows; i++ {
				for q := 0; q < kc; q++ {
					panel[q*mr+i] = data[base+i*rs+q*cs]
				}
			}
		}
		if rows < mr {
			for q := 0; q < kc; q++ {
				clear(panel[q*mr+rows : q*mr+mr])
			}
		}
	}
}

// packB copies column panels [t0, t1) of the kc×n block of B that starts at
// src (row stride rs, column stride cs) into dst: panel t holds columns
// t*nr..t*nr+nr-1 as dst[t*nr*kc + q*nr + j] = B[q][t*nr+j], with columns
// past n set to zero.
// fast, if not nil, packs full panels of a transposed B.
func packB(fast packTFunc, dst, data []float32, src, rs, cs, kc, n, nr, t0, t1 int) {
	for t := t0; t < t1; t++ {
		ncols := min(nr, n-t*nr)
		panel := dst[t*nr*kc : (t+1)*nr*kc]
		base := src + t*nr*cs
		switch {
		case rs == 1 && ncols == nr && fast != nil && fast(panel, data[base:], cs, kc):
		case cs == 1:
			for q := 0; q < kc; q++ {
				copy(panel[q*nr:q*nr+ncols], data[base+q*rs:base+q*rs+ncols])
			}
		case rs == 1:
			// Transposed B: go through it in packBlock-deep slices so the
			// strided writes stay in L1 while the reads stream.
			for q0 := 0; q0 < kc; q0 += packBlock {
				qn := min(packBlock, kc-q0)
				out := panel[q0*nr : (q0+qn)*nr]
				for j := 0; j < ncols; j++ {
					col := data[base+j*cs+q0 : base+j*cs+q0+qn]
					for q, v := range col {
						out[q*nr+j] = v
					}
				}
			}
		default:
			for j := 0; j < ncols; j++ {
				for q := 0; q < kc; q++ {
					panel[q*nr+j] = data[base+q*rs+j*cs]
				}
			}
		}
		if ncols < nr {
			for q := 0; q < kc; q++ {
				clear(panel[q*nr+ncols : q*nr+nr])
			}
		}
	}
}
