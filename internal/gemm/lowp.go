package gemm

import (
	"fmt"
	"math"

	"github.com/grpokit/grpokit/internal/quant"
)

// A frozen weight held in low precision (bfloat16, NF4, int8, a GGUF
// file's ggml blocks) enters a product as a Mat whose Q is set: the
// kernels never see a float32 copy of it. The GEMM path decodes each B
// panel while packing it (the panel is packed anyway; decoding adds a few
// instructions per element to a pass that is memory-bound), and the
// dot-product path (decode steps) decodes a few rows of W at a time into
// an L2-resident scratch that the dot kernels then read, so W crosses the
// memory bus once, at 2 or ½ bytes a value. Decoded values are exactly
// those of a separate dequantization (the same float32 operations), so
// results match a dequantize-then-multiply product up to nothing: the
// same kernels run on the same numbers.

// Format is how a Lowp weight stores its values.
type Format uint8

// The low-precision formats.
const (
	// BF16 holds bfloat16 bit patterns; a value widens exactly.
	BF16 Format = iota + 1
	// NF4 holds bitsandbytes' 4-bit NormalFloat codes, two a byte (the
	// even flat index in the high nibble), and an absmax per block of
	// quant.BlockSize values of the flat index: value = NF4[code]·absmax.
	NF4
	// Int8 holds int8 values and a scale per row: value = float32(q)·scale.
	Int8
	// GGML holds a GGUF file's blocks of one ggml type (quant.GGML), in
	// flat order: value i is in block i/values of the type, decoded as
	// ggml dequantizes it.
	GGML
)

func (f Format) String() string {
	switch f {
	case BF16:
		return "bf16"
	case NF4:
		return "nf4"
	case Int8:
		return "int8"
	case GGML:
		return "ggml"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// Lowp is a row-major matrix (or a batch of them, flat) of Len values in a
// low-precision Format. Only the slices of its Format are used.
type Lowp struct {
	Format Format
	Len    int // number of values (flat)
	Cols   int // row length, for Int8's per-row Scale

	BF16 []uint16 // BF16: Len bit patterns

	Packed []byte    // NF4: ceil(Len/2) bytes
	Absmax []float32 // NF4: one per block of quant.BlockSize

	Int8  []int8    // Int8: Len values
	Scale []float32 // Int8: one per row of Cols values

	Type   quant.GGML // GGML: the block type
	Blocks []byte     // GGML: Len/values blocks
}

// Validate checks that the slices hold Len values.
func (q *Lowp) Validate() error {
	bad := func(what string, got, want int) error {
		return fmt.Errorf("gemm: %v weight of %d values: %s has %d, want %d", q.Format, q.Len, what, got, want)
	}
	switch q.Format {
	case BF16:
		if len(q.BF16) < q.Len {
			return bad("BF16", len(q.BF16), q.Len)
		}
	case NF4:
		if len(q.Packed) < (q.Len+1)/2 {
			return bad("Packed", len(q.Packed), (q.Len+1)/2)
		}
		if nb := (q.Len + quant.BlockSize - 1) / quant.BlockSize; len(q.Absmax) < nb {
			return bad("Absmax", len(q.Absmax), nb)
		}
	case Int8:
		if q.Cols <= 0 {
			return fmt.Errorf("gemm: int8 weight needs Cols > 0")
		}
		if len(q.Int8) < q.Len {
			return bad("Int8", len(q.Int8), q.Len)
		}
		if rows := (q.Len + q.Cols - 1) / q.Cols; len(q.Scale) < rows {
			return bad("Scale", len(q.Scale), rows)
		}
	case GGML:
		vals, size := q.Type.Block()
		if vals == 0 || q.Len%vals != 0 {
			return fmt.Errorf("gemm: ggml weight of %d values: type %v has blocks of %d", q.Len, q.Type, vals)
		}
		if len(q.Blocks) < q.Len/vals*size {
			return bad("Blocks", len(q.Blocks), q.Len/vals*size)
		}
	default:
		return fmt.Errorf("gemm: unknown low-precision format %v", q.Format)
	}
	return nil
}

// lowpVec holds vector decoders (AVX-512 where the CPU has it; nil
// members fall back to the Go loops). Each decodes a prefix of dst and
// returns its length; nf4 decodes whole blocks from a block's start.
type lowpVec struct {
	bf16 func(dst []float32, src []uint16) int
	int8 func(dst []float32, src []int8, scale float32) int
	nf4  func(dst []float32, packed []byte, absmax []float32) int
}

// decodeVec is what Decode uses (tests swap it to check the Go loops).
var decodeVec lowpVec

// Decode writes the float32 values of flat indices off, off+1, …,
// off+len(dst)-1 to dst.
func (q *Lowp) Decode(dst []float32, off int) {
	switch q.Format {
	case BF16:
		src := q.BF16[off : off+len(dst)]
		i := 0
		if decodeVec.bf16 != nil {
			i = decodeVec.bf16(dst, src)
		}
		for ; i < len(dst); i++ {
			dst[i] = math.Float32frombits(uint32(src[i]) << 16)
		}
	case NF4:
		decodeNF4(dst, q.Packed, q.Absmax, off)
	case Int8:
		src := q.Int8[off : off+len(dst)]
		for i := 0; i < len(dst); {
			row := (off + i) / q.Cols
			end := min(len(dst), (row+1)*q.Cols-off)
			s := q.Scale[row]
			if decodeVec.int8 != nil {
				i += decodeVec.int8(dst[i:end], src[i:end], s)
			}
			for j, v := range src[i:end] {
				dst[i+j] = float32(v) * s
			}
			i = end
		}
	case GGML:
		quant.DecodeGGMLAt(q.Type, q.Blocks, dst, off)
	default:
		panic(fmt.Sprintf("gemm: unknown low-precision format %v", q.Format))
	}
}

// decodeNF4 decodes flat indices off.. into dst, one block at a time with
// the block's sixteen values NF4[c]·absmax computed once (the same float32
// product as decoding each value on its own).
func decodeNF4(dst []float32, packed []byte, absmax []float32, off int) {
	var tbl [16]float32
	for i := 0; i < len(dst); {
		blk := (off + i) / quant.BlockSize
		if (off+i)%quant.BlockSize == 0 && len(dst)-i >= quant.BlockSize && decodeVec.nf4 != nil {
			n := (len(dst) - i) / quant.BlockSize * quant.BlockSize
			i += decodeVec.nf4(dst[i:i+n], packed[(off+i)/2:], absmax[blk:])
			continue
		}
		end := min(len(dst), (blk+1)*quant.BlockSize-off)
		a := absmax[blk]
		for c, v := range quant.NF4 {
			tbl[c] = v * a
		}
		j := off + i // flat index of dst[i]
		if j&1 == 1 {
			dst[i] = tbl[packed[j>>1]&15]
			i++
			j++
		}
		pairs := packed[j>>1 : j>>1+(end-i)/2]
		out := dst[i : i+2*len(pairs)]
		for p, b := range pairs {
			out[2*p] = tbl[b>>4]
			out[2*p+1] = tbl[b&15]
		}
		i += 2 * len(pairs)
		if i < end {
			dst[i] = tbl[packed[(off+i)>>1]>>4]
			i++
		}
	}
}

// packBLowp is packB for a low-precision B (see packB): column panels
// [t0, t1) of the kc×n block starting at flat index src. A transposed B
// (rs == 1: the model's x·Wᵀ) has its columns decoded into tmp (nr×kc) and
// packed from there; a row-major B (cs == 1: g·W in the backward pass) is
// decoded straight into the panel rows.
func packBLowp(fast packTFunc, dst []float32, q *Lowp, src, rs, cs, kc, n, nr, t0, t1 int, tmp *[]float32) {
	for t := t0; t < t1; t++ {
		ncols := min(nr, n-t*nr)
		panel := dst[t*nr*kc : (t+1)*nr*kc]
		base := src + t*nr*cs
		switch {
		case cs == 1:
			for p := 0; p < kc; p++ {
				q.Decode(panel[p*nr:p*nr+ncols], base+p*rs)
			}
			if ncols < nr {
				for p := 0; p < kc; p++ {
					clear(panel[p*nr+ncols : p*nr+nr])
				}
			}
		case rs == 1:
			*tmp = grow(*tmp, nr*kc)
			cols := *tmp
			for j := 0; j < ncols; j++ {
				q.Decode(cols[j*kc:(j+1)*kc], base+j*cs)
			}
			packB(fast, panel, cols, 0, 1, kc, kc, ncols, nr, 0, 1)
		default:
			var one [1]float32
			for p := 0; p < kc; p++ {
				for j := 0; j < nr; j++ {
					v := float32(0)
					if j < ncols {
						q.Decode(one[:], base+p*rs+j*cs)
						v = one[0]
					}
					panel[p*nr+j] = v
				}
			}
		}
	}
}

// dotRowsMax bounds the scratch of decoded W rows on the dot-product path
// (bytes): a group of rows stays in L2 while every row block of A passes
// over it.
const dotRowsMax = 192 << 10

// dotLowp is dotCols for a low-precision transposed B: it decodes groups of
// W rows (columns of C) j0..j1 into scratch and runs the dot kernels on them.
func dotLowp(kern *kernel, m, n, k int, ad []float32, aOff, lda int, q *Lowp, bOff, ldb int, c []float32, j0, j1 int) {
	g := max(dotNR, dotRowsMax/4/k/dotNR*dotNR)
	ws := getWork()
	defer putWork(ws)
	for j := j0; j < j1; j += g {
		ng := min(g, j1-j)
		ws.b = grow(ws.b, ng*k)
		for r := range ng {
			q.Decode(ws.b[r*k:(r+1)*k], bOff+(j+r)*ldb)
		}
		// dotCols indexes B by absolute column: shift the base back by j rows.
		dotCols(kern, m, n, k, ad, aOff, lda, ws.b, -j*k, k, c, j, j+ng)
	}
}
