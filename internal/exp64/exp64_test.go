package exp64

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestShiftedMatchesMathExp checks every result bit for bit against
// math.Exp: logits of several spreads, temperatures, odd lengths, and the
// arguments that leave the vector loop (−Inf from banned tokens, NaN,
// arguments down to and past the denormal range).
func TestShiftedMatchesMathExp(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	specials := []float32{float32(math.Inf(-1)), float32(math.NaN()), -1e4, -699.9, -700, -700.1, -708, -708.5, -745, -746, 0,
		float32(math.SmallestNonzeroFloat32), -float32(math.SmallestNonzeroFloat32), 1e-30, -1e-30}
	for _, temp := range []float64{1, 0.7, 1.3, 2, 0.05} {
		for _, n := range []int{0, 1, 3, 4, 5, 17, 4096, 49152} {
			for _, spread := range []float64{1, 10, 300, 2000} {
				src := make([]float32, n)
				for i := range src {
					src[i] = float32(r.NormFloat64() * spread)
				}
				if n >= 64 {
					for i, s := range specials {
						src[r.IntN(n)] = s
						src[(i*97)%n] = s
					}
				}
				shift := math.Inf(-1)
				for _, l := range src {
					shift = max(shift, float64(l)/temp)
				}
				if n == 0 || math.IsNaN(shift) {
					shift = 3
				}
				dst := make([]float64, n+1)
				dst[n] = 42
				Shifted(dst, src, temp, shift)
				if dst[n] != 42 {
					t.Fatalf("wrote past dst")
				}
				for i, l := range src {
					want := math.Exp(float64(l)/temp - shift)
					if math.Float64bits(dst[i]) != math.Float64bits(want) && !(math.IsNaN(want) && math.IsNaN(dst[i])) {
						t.Fatalf("t=%g n=%d spread=%g: exp(%g/%g − %g) = %v (%#x), math.Exp %v (%#x)",
							temp, n, spread, l, temp, shift, dst[i], math.Float64bits(dst[i]), want, math.Float64bits(want))
					}
				}
			}
		}
	}
}

// TestShiftedUniform sweeps arguments evenly over [−700, 0], where the
// vector loop answers alone, in steps far finer than its rounding steps.
func TestShiftedUniform(t *testing.T) {
	const n = 1 << 20
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(-700 * float64(i) / n)
	}
	dst := make([]float64, n)
	for _, shift := range []float64{0, 1e-3, -0.5} {
		Shifted(dst, src, 1, shift)
		for i, l := range src {
			if want := math.Exp(float64(l) - shift); math.Float64bits(dst[i]) != math.Float64bits(want) {
				t.Fatalf("exp(%g − %g) = %v, math.Exp %v", l, shift, dst[i], want)
			}
		}
	}
}

func BenchmarkShifted(b *testing.B) {
	src := make([]float32, 49152)
	for i := range src {
		src[i] = float32(math.Sin(float64(i))) * 8
	}
	dst := make([]float64, len(src))
	for b.Loop() {
		Shifted(dst, src, 1, 8)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(src)), "ns/value")
}

func BenchmarkMathExp(b *testing.B) {
	src := make([]float32, 49152)
	for i := range src {
		src[i] = float32(math.Sin(float64(i))) * 8
	}
	dst := make([]float64, len(src))
	for b.Loop() {
		for i, l := range src {
			dst[i] = math.Exp(float64(l) - 8)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(src)), "ns/value")
}
