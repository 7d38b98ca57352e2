package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Hand-made blocks whose values are the NF4 codes times an absmax come back
// exactly, with the code i at position i.
func TestNF4ReproducesTable(t *testing.T) {
	for _, absmax := range []float32{1, 0.5, 2.5, 3e-3, 117} {
		x := make([]float32, 2*BlockSize)
		for i := range x {
			x[i] = NF4[i%16] * absmax
		}
		q := QuantizeNF4(x, false)
		if err := q.Validate(); err != nil {
			t.Fatal(err)
		}
		for b, m := range q.Absmax {
			if m != absmax {
				t.Errorf("absmax %g: block %d has absmax %g", absmax, b, m)
			}
		}
		for j := range x {
			c := q.Packed[j/2]
			if j%2 == 0 {
				c >>= 4
			}
			if int(c&15) != j%16 {
				t.Fatalf("absmax %g: value %d gets code %d, want %d", absmax, j, c&15, j%16)
			}
		}
		got := q.Dequantize(make([]float32, len(x)))
		for j := range x {
			if got[j] != x[j] {
				t.Fatalf("absmax %g: value %d dequantizes to %g, want %g", absmax, j, got[j], x[j])
			}
		}
	}
}

// The packing is bitsandbytes': value 0 in the high nibble of byte 0.
func TestNF4Packing(t *testing.T) {
	x := make([]float32, BlockSize)
	x[0], x[1], x[2] = 1, -1, 0.5626170039176941 // codes 15, 0, 13
	q := QuantizeNF4(x, false)
	if q.Packed[0] != 0xF0 || q.Packed[1] != 0xD7 || q.Packed[2] != 0x77 {
		t.Errorf("packed % x, want f0 d7 77", q.Packed[:3])
	}
}

// NF4Code is the nearest code (the lower one exactly on a midpoint), the
// rule of bitsandbytes' decision tree, against a brute-force search.
func TestNF4CodeIsNearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(v float32) {
		best, bestD := 0, math.Inf(1)
		for c, w := range NF4 {
			if d := math.Abs(float64(v) - float64(w)); d < bestD {
				best, bestD = c, d
			}
		}
		if got := NF4Code(v); int(got) != best {
			t.Fatalf("NF4Code(%v) = %d, nearest is %d", v, got, best)
		}
	}
	for range 200000 {
		check(float32(2*r.Float64() - 1))
	}
	// Around each midpoint: the float32 just above goes up, the one just
	// below goes down.
	for c := range 15 {
		mid := float32((float64(NF4[c]) + float64(NF4[c+1])) / 2)
		for _, v := range []float32{math.Nextafter32(mid, -2), math.Nextafter32(math.Nextafter32(mid, 2), 2)} {
			check(v)
		}
		if got := NF4Code(math.Nextafter32(mid, 2)); got != byte(c+1) && got != byte(c) {
			t.Errorf("midpoint %d: code %d", c, got)
		}
	}
}

// bitsandbytes' thresholds sit on the float32 midpoints of the table, and
// the midpoint itself takes the lower code.
func TestNF4Thresholds(t *testing.T) {
	thresholds := []float32{-0.8480964004993439, -0.6106329262256622, -0.4599952697753906,
		-0.33967943489551544, -0.23460740596055984, -0.13791173323988914, -0.045525018125772476,
		0.03979014977812767, 0.1202552504837513, 0.2035212516784668, 0.2920137718319893,
		0.3893125355243683, 0.5016634166240692, 0.6427869200706482, 0.8614784181118011}
	for c, th := range thresholds {
		mid := (float64(NF4[c]) + float64(NF4[c+1])) / 2
		if math.Abs(float64(th)-mid) > 1e-7 {
			t.Errorf("threshold %d = %v, midpoint %v", c, th, mid)
		}
		if got := NF4Code(th); got != byte(c) {
			t.Errorf("NF4Code(threshold %d) = %d, want the lower code %d", c, got, c)
		}
		if got := NF4Code(math.Nextafter32(th, 2)); got != byte(c+1) {
			t.Errorf("NF4Code(just above threshold %d) = %d, want %d", c, got, c+1)
		}
	}
}

// A zero block quantizes (NaN → code 0, as bitsandbytes) and dequantizes to 0.
func TestNF4ZeroBlockAndTail(t *testing.T) {
	x := make([]float32, BlockSize+3) // a short last block
	x[BlockSize], x[BlockSize+2] = -2, 1
	q := QuantizeNF4(x, false)
	if len(q.Absmax) != 2 || q.Absmax[0] != 0 || q.Absmax[1] != 2 {
		t.Fatalf("absmax %v", q.Absmax)
	}
	got := q.Dequantize(make([]float32, len(x)))
	want := map[int]float32{BlockSize: -2, BlockSize + 1: 0, BlockSize + 2: 0.88142} // 1/2 = 0.5 lies below the midpoint 0.5017: code 0.4407
	for j, v := range got {
		w := want[j]
		if math.Abs(float64(v-w)) > 1e-4 {
			t.Errorf("value %d = %g, want %g", j, v, w)
		}
	}
}

// Random normal weights: the error of every value is at most half the gap
// between the codes around it times the block's absmax.
func TestNF4ErrorBound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(0.02 * r.NormFloat64())
	}
	for _, double := range []bool{false, true} {
		q := QuantizeNF4(x, double)
		if err := q.Validate(); err != nil {
			t.Fatal(err)
		}
		got := q.Dequantize(make([]float32, len(x)))
		var maxGap float64
		for c := range 15 {
			maxGap = max(maxGap, float64(NF4[c+1]-NF4[c]))
		}
		for j := range x {
			var m float64
			for _, v := range x[j/BlockSize*BlockSize : (j/BlockSize+1)*BlockSize] {
				m = max(m, math.Abs(float64(v)))
			}
			bound := maxGap/2*m*1.01 + 1e-4*m // double quantization moves the absmax slightly
			if e := math.Abs(float64(got[j] - x[j])); e > bound {
				t.Fatalf("double=%v value %d: error %g > %g", double, j, e, bound)
			}
		}
	}
}

// The dynamic map of double quantization: 256 sorted values, symmetric,
// with 0 and 1, and hand-computed entries (midpoints of linspace(0.1, 1, n)).
func TestDynamicMap(t *testing.T) {
	m := DynamicMap()
	for i := 1; i < 256; i++ {
		if m[i] < m[i-1] {
			t.Fatalf("not sorted at %d", i)
		}
	}
	if m[255] != 1 || m[0] != -0.99296875 || m[254] != 0.99296875 {
		t.Errorf("ends %v %v %v", m[0], m[254], m[255])
	}
	has := func(v float32) bool {
		for _, x := range m {
			if math.Abs(float64(x-v)) <= 1e-6*math.Abs(float64(v)) {
				return true
			}
		}
		return false
	}
	for _, v := range []float32{0, 5.5e-7, -5.5e-7, 0.10703125, -0.10703125, 3.25e-6, 7.75e-6, -7.75e-6} {
		if !has(v) {
			t.Errorf("map lacks %v", v)
		}
	}
	zeros := 0
	for _, x := range m {
		if x == 0 {
			zeros++
		}
	}
	if zeros != 1 {
		t.Errorf("%d zeros", zeros)
	}
}

func TestBlockwise8RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 3*DoubleBlockSize+17)
	for i := range x {
		x[i] = float32(0.05 + 0.01*r.Float64())
	}
	q := QuantizeBlockwise8(x)
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	got := q.Dequantize()
	for i := range x {
		// The coarsest step of the map near ±1 is 1/64 of the block's range.
		if e := math.Abs(float64(got[i] - x[i])); e > 0.01/64 {
			t.Fatalf("value %d: %g vs %g", i, got[i], x[i])
		}
	}
}

// Hand-computed LLM.int8 rows: round half to even, 1/127 as bitsandbytes.
func TestInt8(t *testing.T) {
	x := []float32{
		1, -0.5, 0.25, 0,
		0, 0, 0, 0,
		-4, 2, 1, 0.5,
	}
	q, err := QuantizeInt8(x, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []int8{127, -64, 32, 0, 0, 0, 0, 0, -127, 64, 32, 16}
	for i, w := range want {
		if q.Q[i] != w {
			t.Errorf("q[%d] = %d, want %d", i, q.Q[i], w)
		}
	}
	if q.Absmax[0] != 1 || q.Absmax[1] != 0 || q.Absmax[2] != 4 {
		t.Errorf("absmax %v", q.Absmax)
	}
	got := q.Dequantize(make([]float32, 12))
	// -64 · 1 · 7.874015718698502e-3 in float32.
	if want := float32(-64) * 1 * float32(7.874015718698502e-3); got[1] != want {
		t.Errorf("dequantized %g, want %g", got[1], want)
	}
	for i, v := range x {
		if math.Abs(float64(got[i]-v)) > float64(q.Absmax[i/4])/254+1e-7 {
			t.Errorf("value %d: %g vs %g", i, got[i], v)
		}
	}
	if _, err := QuantizeInt8(x, 5, 4); err == nil {
		t.Error("no error for a wrong shape")
	}
}
