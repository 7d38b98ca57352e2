package adamw

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

func testData(n int) (w, g, m1, m2 []float32) {
	w, g, m1, m2 = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range w {
		w[i] = float32(math.Sin(float64(3*i+1))) * 0.05
		g[i] = float32(math.Cos(float64(7*i+2))) * float32(math.Pow(10, float64(i%5-3)))
		m1[i] = float32(math.Sin(float64(i))) * 1e-3
		m2[i] = float32(math.Abs(math.Cos(float64(i)))) * 1e-6
	}
	g[0] = 0
	return
}

func testParams(step int, decay float32) Params {
	b1, b2 := float32(0.9), float32(0.999)
	return Params{
		LR: 1e-3, Beta1: b1, OneMinusBeta1: 1 - b1, Beta2: b2, OneMinusBeta2: 1 - b2,
		Debias1: float32(1 / (1 - math.Pow(float64(b1), float64(step)))),
		Debias2: float32(1 / (1 - math.Pow(float64(b2), float64(step)))),
		Epsilon: 1e-8, WeightDecay: decay,
	}
}

// TestStepMatchesFloat64: one step against the formulas evaluated in
// float64 from the same inputs and scalars (relative 1e-6 for the moments,
// 2e-6 for the weights: float32 rounding of a few operations), on a
// length that the cores split, and bit for bit against one goroutine.
func TestStepMatchesFloat64(t *testing.T) {
	const n = 5*minChunk + 7
	for _, decay := range []float32{0.1, 0} {
		p := testParams(3, decay)
		w, g, m1, m2 := testData(n)
		w0, m10, m20 := append([]float32(nil), w...), append([]float32(nil), m1...), append([]float32(nil), m2...)
		Step(p, w, g, m1, m2)
		rw, rm1, rm2 := append([]float32(nil), w0...), append([]float32(nil), m10...), append([]float32(nil), m20...)
		step(p, rw, g, rm1, rm2)
		for i := range w {
			f := func(x float32) float64 { return float64(x) }
			// Each tolerance is relative to the sum of the magnitudes of the
			// terms (a sum of terms of opposite signs cancels).
			em1 := f(p.Beta1)*f(m10[i]) + f(p.OneMinusBeta1)*f(g[i])
			sm1 := math.Abs(f(p.Beta1)*f(m10[i])) + math.Abs(f(p.OneMinusBeta1)*f(g[i]))
			em2 := f(p.Beta2)*f(m20[i]) + f(p.OneMinusBeta2)*f(g[i])*f(g[i])
			upd := (em1 * f(p.Debias1)) / (math.Sqrt(em2*f(p.Debias2)) + f(p.Epsilon))
			ew := f(w0[i]) - f(p.LR)*(upd+f(p.WeightDecay)*f(w0[i]))
			sw := math.Abs(f(w0[i])) + f(p.LR)*(math.Abs(upd)*(1+sm1/max(math.Abs(em1), 1e-30))+math.Abs(f(p.WeightDecay)*f(w0[i])))
			for _, c := range []struct {
				name             string
				got, want, scale float64
				tol              float64
			}{{"m1", f(m1[i]), em1, sm1, 1e-6}, {"m2", f(m2[i]), em2, em2, 1e-6}, {"w", f(w[i]), ew, sw, 2e-6}} {
				if d := math.Abs(c.got - c.want); d > c.tol*c.scale {
					t.Fatalf("decay %g: %s[%d] = %.9g, float64 %.9g", decay, c.name, i, c.got, c.want)
				}
			}
			if math.Float32bits(w[i]) != math.Float32bits(rw[i]) || m1[i] != rm1[i] || m2[i] != rm2[i] {
				t.Fatalf("decay %g: element %d differs between the split and one goroutine", decay, i)
			}
		}
	}
}

func TestStepLengths(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Step with slices of different lengths did not panic")
		}
	}()
	Step(testParams(1, 0), make([]float32, 3), make([]float32, 2), make([]float32, 3), make([]float32, 3))
}

// BenchmarkStep: one step over 16M parameters (the size of SmolLM2-135M's
// larger matrices times a few); ns/param and GB/s of the 28 bytes moved
// per parameter.
func BenchmarkStep(b *testing.B) {
	const n = 1 << 24
	w, g, m1, m2 := testData(n)
	p := testParams(2, 0.01)
	b.SetBytes(28 * n)
	b.ResetTimer()
	for range b.N {
		Step(p, w, g, m1, m2)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/param")
	_ = runtime.GOMAXPROCS(0)
}

// TestStepVectorSameBits: the AVX-512 loop (where the CPU has one) gives
// the Go loop's bits, on values of every scale (zeros of both signs,
// subnormals, huge gradients, NaN and Inf among them), with and without
// weight decay and gradient scale, on lengths with and without a tail.
func TestStepVectorSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	val := func(scale float64) float32 {
		switch r.IntN(40) {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		case 2:
			return math.Float32frombits(r.Uint32() & 0x807fffff) // subnormal
		case 3:
			return float32(math.NaN())
		case 4:
			return float32(math.Inf(1 - 2*r.IntN(2)))
		}
		return float32(r.NormFloat64() * scale * math.Pow(10, float64(r.IntN(9)-4)))
	}
	for _, n := range []int{15, 16, 1000, 4099} {
		for _, decay := range []float32{0, 0.1} {
			for _, gs := range []float32{0, 1, 0.37} {
				p := testParams(2, decay)
				p.GradScale = gs
				w, g, m1, m2 := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
				for i := range w {
					w[i], g[i], m1[i] = val(0.05), val(1e-2), val(1e-3)
					m2[i] = float32(math.Abs(float64(val(1e-6))))
				}
				rw, rm1, rm2 := append([]float32(nil), w...), append([]float32(nil), m1...), append([]float32(nil), m2...)
				step(p, w, g, m1, m2)
				vecOn = false
				step(p, rw, g, rm1, rm2)
				vecOn = true
				for i := range w {
					for _, c := range [][2]float32{{w[i], rw[i]}, {m1[i], rm1[i]}, {m2[i], rm2[i]}} {
						if math.Float32bits(c[0]) != math.Float32bits(c[1]) {
							t.Fatalf("n %d decay %g scale %g: element %d (g %g): %g vectorized, %g in Go", n, decay, gs, i, g[i], c[0], c[1])
						}
					}
				}
			}
		}
	}
}

// BenchmarkStepLoop is one AdamW step of 1M parameters on one goroutine, in
// the Go loop and vectorized (where the CPU has AVX-512).
func BenchmarkStepLoop(b *testing.B) {
	for _, vec := range []bool{false, true} {
		name := "go"
		if vec {
			name = "avx512"
		}
		b.Run(name, func(b *testing.B) {
			defer func() { vecOn = true }()
			vecOn = vec
			w, g, m1, m2 := testData(1 << 20)
			p := testParams(3, 0.1)
			p.GradScale = 0.5
			b.SetBytes(28 << 20)
			for b.Loop() {
				step(p, w, g, m1, m2)
			}
		})
	}
}
