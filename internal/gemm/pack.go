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
		case cs == 1 && rows == 12 && mr == 12:
			packA12(panel, data[base:], rs, kc)
		case rs == 1 && cs > 0 && rows == 12 && mr == 12 && packA12TFast != nil && !packAPortable:
			// Transposed A, a full panel, by vector moves: every read lies
			// in data[base : base+(kc-1)*cs+12].
			_ = data[base+(kc-1)*cs+11]
			packA12TFast(kc, &data[base], cs, &panel[0])
		case rs == 1 && rows == 12 && mr == 12:
			// Transposed A, a full panel: element moves instead of a
			// memmove call per 48 bytes (~5% of a weight-gradient product).
			for q := 0; q < kc; q++ {
				d := panel[q*12 : q*12+12 : q*12+12]
				r := data[base+q*cs : base+q*cs+12 : base+q*cs+12]
				d[0], d[1], d[2], d[3], d[4], d[5] = r[0], r[1], r[2], r[3], r[4], r[5]
				d[6], d[7], d[8], d[9], d[10], d[11] = r[6], r[7], r[8], r[9], r[10], r[11]
			}
		case cs == 1 && rows == 6 && mr == 6:
			packA6(panel, data[base:], rs, kc)
		case rs == 1 && cs > 0 && rows == 6 && mr == 6 && packA6TFast != nil && !packAPortable:
			_ = data[base+(kc-1)*cs+5]
			packA6TFast(kc, &data[base], cs, &panel[0])
		case rs == 1 && rows == 6 && mr == 6:
			for q := 0; q < kc; q++ {
				d := panel[q*6 : q*6+6 : q*6+6]
				r := data[base+q*cs : base+q*cs+6 : base+q*cs+6]
				d[0], d[1], d[2], d[3], d[4], d[5] = r[0], r[1], r[2], r[3], r[4], r[5]
			}
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

// packA12 packs a full 12-row panel of a row-major A (row stride rs):
// the common case, written out so that the compiler drops the bounds checks
// and walks the twelve rows together (the generic loop costs ~10% of a
// large product).
func packA12(panel, src []float32, rs, kc int) {
	r0, r1, r2, r3 := src[:kc], src[rs:rs+kc], src[2*rs:2*rs+kc], src[3*rs:3*rs+kc]
	r4, r5, r6, r7 := src[4*rs:4*rs+kc], src[5*rs:5*rs+kc], src[6*rs:6*rs+kc], src[7*rs:7*rs+kc]
	r8, r9, r10, r11 := src[8*rs:8*rs+kc], src[9*rs:9*rs+kc], src[10*rs:10*rs+kc], src[11*rs:11*rs+kc]
	panel = panel[:12*kc]
	q0 := 0
	if n16 := kc / 16; n16 > 0 && packA12Fast != nil && !packAPortable {
		// The slicing above bounds every read (rows 0–11, kc columns).
		packA12Fast(n16, &src[0], rs, &panel[0])
		q0 = 16 * n16
	}
	for q := q0; q < kc; q++ {
		d := panel[12*q : 12*q+12 : 12*q+12]
		d[0], d[1], d[2], d[3] = r0[q], r1[q], r2[q], r3[q]
		d[4], d[5], d[6], d[7] = r4[q], r5[q], r6[q], r7[q]
		d[8], d[9], d[10], d[11] = r8[q], r9[q], r10[q], r11[q]
	}
}

// packA6 packs a full 6-row panel of a row-major A (row stride rs), the
// AVX2 kernels' tile, as packA12 does twelve rows: the generic loop's
// strided stores cost ~13% of an AVX2 training step.
func packA6(panel, src []float32, rs, kc int) {
	r0, r1, r2 := src[:kc], src[rs:rs+kc], src[2*rs:2*rs+kc]
	r3, r4, r5 := src[3*rs:3*rs+kc], src[4*rs:4*rs+kc], src[5*rs:5*rs+kc]
	panel = panel[:6*kc]
	q0 := 0
	if n4 := kc / 4; n4 > 0 && packA6Fast != nil && !packAPortable {
		// The slicing above bounds every read (rows 0–5, kc columns).
		packA6Fast(n4, &src[0], rs, &panel[0])
		q0 = 4 * n4
	}
	for q := q0; q < kc; q++ {
		d := panel[6*q : 6*q+6 : 6*q+6]
		d[0], d[1], d[2], d[3], d[4], d[5] = r0[q], r1[q], r2[q], r3[q], r4[q], r5[q]
	}
}

// packA6Fast and packA6TFast, when not nil, do for 6-row panels what
// packA12Fast and packA12TFast do for 12-row ones (packA6Fast four
// columns at a time: n counts fours).
var packA6Fast, packA6TFast func(n int, src *float32, stride int, dst *float32)

// packA12Fast, when not nil, packs 16*n16 columns of a full 12-row panel
// of a row-major A (row stride rs) as packA12 does, transposing in vector
// registers: several times faster than the scalar loop, which cost ~8% of
// the training step's products.
var packA12Fast func(n16 int, src *float32, rs int, dst *float32)

// packA12TFast, when not nil, packs a full 12-row panel kc deep of a
// transposed A (column stride cs) as packA's Go loop does.
var packA12TFast func(kc int, src *float32, cs int, dst *float32)

// packAPortable makes packA use only its Go loops (tests compare).
var packAPortable bool

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
