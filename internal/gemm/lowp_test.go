package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpokit/grpokit/internal/quant"
)

// lowpOf holds size random values in format f (int8 rows of cols values)
// and returns it with its values dequantized separately: bfloat16 widened,
// NF4 by quant's own Dequantize, int8 as q·scale (the graph's formula).
func lowpOf(t *testing.T, r *rand.Rand, f Format, size, cols int) (*Lowp, []float32) {
	t.Helper()
	x := make([]float32, size)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	if f == GGML { // a random type; whole blocks
		size = (size + 255) / 256 * 256
	}
	q := &Lowp{Format: f, Len: size, Cols: cols}
	ref := make([]float32, size)
	switch f {
	case GGML:
		q.Type = quant.GGML(1 + r.IntN(4))
		vals, bytes := q.Type.Block()
		q.Blocks = make([]byte, size/vals*bytes)
		for i := range q.Blocks {
			q.Blocks[i] = byte(r.UintN(256))
		}
		for b := 0; b < len(q.Blocks); b += bytes {
			// fp16 scales below 2 in magnitude (bit 14 of the exponent off).
			q.Blocks[b+1] &^= 0x40
			q.Blocks[b+3] &^= 0x40
		}
		quant.DecodeGGML(q.Type, q.Blocks, ref)
	case BF16:
		q.BF16 = make([]uint16, size)
		for i, v := range x {
			q.BF16[i] = uint16(math.Float32bits(v) >> 16)
			ref[i] = math.Float32frombits(uint32(q.BF16[i]) << 16)
		}
	case NF4:
		n := quant.QuantizeNF4(x, false)
		q.Packed, q.Absmax = n.Packed, n.Absmax
		n.Dequantize(ref)
	case Int8:
		n, err := quant.QuantizeInt8(x, size/cols, cols)
		if err != nil {
			t.Fatal(err)
		}
		q.Int8 = n.Q
		for i, a := range n.Absmax {
			q.Scale = append(q.Scale, a*float32(7.874015718698502e-3))
			for c := range cols {
				ref[i*cols+c] = float32(n.Q[i*cols+c]) * q.Scale[i]
			}
		}
	}
	return q, ref
}

// TestLowpDecode checks Decode against the separate dequantization at every
// offset and length of a window that crosses NF4 blocks and int8 rows.
func TestLowpDecode(t *testing.T) {
	forEachDecoder(t, func(t *testing.T) { testLowpDecode(t) })
}

// forEachDecoder runs f with the vector decoders (if this CPU has them)
// and with the Go loops.
func forEachDecoder(t *testing.T, f func(t *testing.T)) {
	defer func(v lowpVec) { decodeVec = v }(decodeVec)
	vec := decodeVec
	for _, d := range []struct {
		name string
		v    lowpVec
	}{{"vector", vec}, {"go", lowpVec{}}} {
		t.Run(d.name, func(t *testing.T) {
			if d.name == "vector" && vec.bf16 == nil {
				t.Skip("no vector decoders on this CPU")
			}
			decodeVec = d.v
			f(t)
		})
	}
}

func testLowpDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, f := range []Format{BF16, NF4, Int8, GGML, GGML, GGML, GGML} {
		q, ref := lowpOf(t, r, f, 640, 40)
		for off := 0; off < 140; off++ {
			for _, n := range []int{1, 2, 3, 15, 16, 17, 63, 64, 65, 130, 180, 257, 500} {
				got := make([]float32, n)
				q.Decode(got, off)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(ref[off+i]) {
						t.Fatalf("%v: Decode(off=%d, n=%d)[%d] = %g, want %g", f, off, n, i, got[i], ref[off+i])
					}
				}
			}
		}
	}
}

// TestGemmLowp compares products with a low-precision B against the same
// product on the separately dequantized float32 B: the kernels run on the
// same numbers, so the results must be bit-identical. Odd sizes and
// offsets (odd NF4 nibbles, blocks and int8 rows split across panels),
// transposed B (x·Wᵀ) and row-major B (g·W), the dot-product path on and
// off, every kernel family, batches.
func TestGemmLowp(t *testing.T) {
	shapes := [][3]int{{1, 1, 1}, {3, 5, 7}, {8, 33, 65}, {13, 70, 130}, {32, 4, 200}, {40, 97, 129}, {150, 45, 700}}
	forEachDecoder(t, func(t *testing.T) { testGemmLowp(t, shapes) })
}

func testGemmLowp(t *testing.T, shapes [][3]int) {
	forEachImpl(t, func(t *testing.T) {
		forEachDotMode(func() {
			seed := uint64(5)
			for _, f := range []Format{BF16, NF4, Int8, GGML} {
				for _, s := range shapes {
					for _, lb := range []layout{{transposed: true}, {}, {transposed: true, off: 1}, {off: 3}, {transposed: true, batchLast: true, off: 1}} {
						seed++
						name := fmt.Sprintf("%v/%dx%dx%d/%v", f, s[0], s[1], s[2], lb)
						checkLowp(t, name, f, 1+int(seed%2), s[0], s[1], s[2], lb, seed)
					}
				}
			}
		})
	})
}

func checkLowp(t *testing.T, name string, f Format, batch, m, n, k int, lb layout, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 9))
	a, _ := layout{}.make(r, batch, m, k)
	b, _ := lb.make(r, batch, k, n)
	// Replace B's values by low-precision ones over its whole buffer
	// (int8 rows of 3 values, so rows split everywhere).
	size := (len(b.Data) + 2) / 3 * 3
	q, ref := lowpOf(t, r, f, size, 3)
	dense := b
	dense.Data = ref
	lowp := b
	lowp.Data, lowp.Q = nil, q
	want := make([]float32, batch*m*n)
	got := make([]float32, batch*m*n+1)
	got[batch*m*n] = 42
	// A low-precision B never takes the strided path (strided.go): the
	// dense product must run on the path it does take.
	defer func(r int) { stridedMinRows = r }(stridedMinRows)
	stridedMinRows = 1 << 30
	for i := range batch * m * n {
		got[i] = float32(math.NaN())
	}
	Gemm(batch, m, n, k, a, dense, want)
	Gemm(batch, m, n, k, a, lowp, got)
	if got[batch*m*n] != 42 {
		t.Fatalf("%s: wrote past C", name)
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s batch=%d: C[%d] = %g, want %g (dequantize then multiply)", name, batch, i, got[i], want[i])
		}
	}
}

// TestGemmLowpA: a low-precision A is decoded first (rare; same result).
func TestGemmLowpA(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, la := range []layout{{}, {transposed: true, off: 1}} {
		a, _ := la.make(r, 2, 9, 70)
		b, _ := layout{}.make(r, 2, 70, 11)
		q, ref := lowpOf(t, r, NF4, len(a.Data)+1, 1)
		dense, lowp := a, a
		dense.Data = ref
		lowp.Data, lowp.Q = nil, q
		want, got := make([]float32, 2*9*11), make([]float32, 2*9*11)
		Gemm(2, 9, 11, 70, dense, b, want)
		Gemm(2, 9, 11, 70, lowp, b, got)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%v: C[%d] = %g, want %g", la, i, got[i], want[i])
			}
		}
	}
}

func TestLowpValidate(t *testing.T) {
	for _, q := range []*Lowp{
		{Format: BF16, Len: 4, BF16: make([]uint16, 3)},
		{Format: NF4, Len: 65, Packed: make([]byte, 33), Absmax: make([]float32, 1)},
		{Format: NF4, Len: 65, Packed: make([]byte, 32), Absmax: make([]float32, 2)},
		{Format: Int8, Len: 6, Cols: 0},
		{Format: Int8, Len: 6, Cols: 3, Int8: make([]int8, 6), Scale: make([]float32, 1)},
		{Format: GGML, Len: 64, Type: quant.Q4_0, Blocks: make([]byte, 35)},
		{Format: GGML, Len: 100, Type: quant.Q8_0, Blocks: make([]byte, 1000)},
		{Format: GGML, Len: 256},
		{Format: 0, Len: 1},
	} {
		if q.Validate() == nil {
			t.Errorf("%+v: Validate = nil, want an error", *q)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Gemm with an invalid Lowp did not panic")
		}
	}()
	Gemm(1, 1, 1, 4, Mat{Data: make([]float32, 4), RS: 4, CS: 1}, Mat{Q: &Lowp{Format: BF16, Len: 4, BF16: make([]uint16, 2)}, RS: 1, CS: 1}, make([]float32, 1))
}

// BenchmarkGemmLowp is a Qwen2.5-0.5B MLP projection (896 → 4864) with the
// weight W [4864, 896] held as float32, bfloat16, NF4 or int8: forward
// x·Wᵀ at decode (8, 32 rows) and prefill/training (1600 rows) sizes, and
// the backward product g·W the adapters need (bwd). ns/op is per product;
// GB/s counts the weight bytes read once.
func BenchmarkGemmLowp(b *testing.B) {
	const out, in = 4864, 896
	r := rand.New(rand.NewPCG(1, 1))
	formats := []Format{0, BF16, NF4, Int8}
	ws := map[Format]*Lowp{}
	var ref []float32
	for _, f := range formats[1:] {
		q, d := lowpOfB(r, f, out*in, in)
		ws[f] = q
		ref = d
	}
	wbytes := map[Format]float64{0: 4, BF16: 2, NF4: 0.5 + 4.0/64, Int8: 1 + 4.0/in}
	for _, m := range []int{8, 32, 1600} {
		for _, bwd := range []bool{false, true} {
			for _, f := range formats {
				name := fmt.Sprintf("fwd/m%d/%v", m, f)
				k, n := in, out
				w := Mat{Data: ref, RS: 1, CS: in} // Wᵀ: k=in × n=out
				if bwd {
					name = fmt.Sprintf("bwd/m%d/%v", m, f)
					k, n = out, in
					w = Mat{Data: ref, RS: in, CS: 1} // W: k=out × n=in
				}
				if f == 0 {
					name = name[:len(name)-len("Format(0)")] + "f32"
				} else {
					w.Data, w.Q = nil, ws[f]
				}
				b.Run(name, func(b *testing.B) {
					a := Mat{Data: make([]float32, m*k), RS: k, CS: 1}
					for i := range a.Data {
						a.Data[i] = float32(i%7) * 0.1
					}
					c := make([]float32, m*n)
					defer SetThreads(SetThreads(*benchThreads))
					cpu0 := cpuSeconds()
					for b.Loop() {
						Gemm(1, m, n, k, a, w, c)
					}
					cpu := cpuSeconds() - cpu0
					b.ReportMetric(wbytes[f]*out*in*float64(b.N)/b.Elapsed().Seconds()/1e9, "wGB/s")
					b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					if cpu > 0 {
						b.ReportMetric(cpu/float64(b.N)*1e3, "cpu-ms/op")
					}
				})
			}
		}
	}
}

// lowpOfB is lowpOf for benchmarks.
func lowpOfB(r *rand.Rand, f Format, size, cols int) (*Lowp, []float32) {
	t := &testing.T{}
	return lowpOf(t, r, f, size, cols)
}
