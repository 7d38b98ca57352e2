package vec32

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// forEachImpl runs f once per family this CPU supports, so the AVX2
// loops are tested on AVX-512 machines too.
func forEachImpl(t *testing.T, f func(t *testing.T)) {
	for _, impl := range []Impl{Portable, AVX2, AVX512} {
		t.Run(impl.String(), func(t *testing.T) {
			if !Supported(impl) {
				t.Skipf("%v not supported on this CPU/build", impl)
			}
			prev, err := Use(impl)
			if err != nil {
				t.Fatal(err)
			}
			defer Use(prev)
			f(t)
		})
	}
}

var lengths = []int{0, 1, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 127, 1000 + 3, 4096 + 5}

// specials are values whose IEEE results are easy to get wrong.
var specials = []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
	float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-40, -3e-39}

func randomSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		switch r.IntN(8) {
		case 0:
			s[i] = specials[r.IntN(len(specials))]
		case 1:
			s[i] = math.Float32frombits(r.Uint32()) // any bit pattern
		default:
			s[i] = float32(r.NormFloat64() * 10)
		}
	}
	return s
}

// sameBits fails unless got and want are bit-identical (any NaN matches
// any NaN).
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		g, w := got[i], want[i]
		if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
			t.Fatalf("%s: element %d of %d = %g, want %g", what, i, len(want), g, w)
		}
	}
}

var refBinary = [numOps]func(a, b float32) float32{
	Add: func(a, b float32) float32 { return a + b },
	Sub: func(a, b float32) float32 { return a - b },
	Mul: func(a, b float32) float32 { return a * b },
	Div: func(a, b float32) float32 { return a / b },
}

func TestBinaryExact(t *testing.T) {
	forEachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, n := range lengths {
			for op := range numOps {
				a, b := randomSlice(r, n), randomSlice(r, n)
				c := randomSlice(r, 1)[0]
				vv, vs, sv := make([]float32, n), make([]float32, n), make([]float32, n)
				for i := range n {
					vv[i] = refBinary[op](a[i], b[i])
					vs[i] = refBinary[op](a[i], c)
					sv[i] = refBinary[op](c, b[i])
				}
				name := fmt.Sprintf("op %d n %d", op, n)
				got := make([]float32, n)
				Binary(op, got, a, b)
				sameBits(t, name+" vv", got, vv)
				BinaryScalar(op, got, a, c)
				sameBits(t, name+" vs", got, vs)
				ScalarBinary(op, got, c, b)
				sameBits(t, name+" sv", got, sv)
				// In place: dst is the first operand.
				inPlace := append([]float32(nil), a...)
				Binary(op, inPlace, inPlace, b)
				sameBits(t, name+" vv in place", inPlace, vv)
				inPlace = append(inPlace[:0], b...)
				ScalarBinary(op, inPlace, c, inPlace)
				sameBits(t, name+" sv in place", inPlace, sv)
			}
		}
	})
}

// ulps is the distance between two float32 of the same sign in units in
// the last place (+Inf is one past MaxFloat32); NaN against non-NaN is
// "infinitely" far.
func ulps(a, b float32) int64 {
	if a != a || b != b {
		if a != a && b != b {
			return 0
		}
		return math.MaxInt64
	}
	key := func(x float32) int64 { // monotonic map of the bits
		u := int64(math.Float32bits(x) &^ (1 << 31))
		if math.Signbit(float64(x)) {
			return -u
		}
		return u
	}
	d := key(a) - key(b)
	return max(d, -d)
}

func refExp(x float32) float32 { return float32(math.Exp(float64(x))) }

func refLogistic(x float32) float32 {
	v := float64(x)
	if v >= 0 {
		return float32(1 / (1 + math.Exp(-v)))
	}
	e := math.Exp(v)
	return float32(e / (1 + e))
}

// expInputs is a dense sweep of the interesting range (every float32 bit
// pattern at a stride, both signs, up to and past the 0 and +Inf
// thresholds), random bit patterns and the edge cases.
func expInputs(t *testing.T) []float32 {
	stride := uint32(257)
	if testing.Short() {
		stride = 9973
	}
	var xs []float32
	for bits := uint32(0); bits <= math.Float32bits(120); bits += stride {
		x := math.Float32frombits(bits)
		xs = append(xs, x, -x)
	}
	for x := float32(-110); x <= 95; x += 1.0 / 1024 { // evenly in value
		xs = append(xs, x)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 1 << 16 {
		xs = append(xs, math.Float32frombits(r.Uint32()))
	}
	xs = append(xs, specials...)
	for _, edge := range []float32{88.72283, 88.722839, 88.7228394, 88.72284, 89, 89.0001,
		-87.33654, -87.3365479, -103.97208, -103.972084, -103.9721, -104, -104.0001, -149 * math.Ln2} {
		for d := int32(-3); d <= 3; d++ { // and its neighbours
			xs = append(xs, math.Float32frombits(uint32(int32(math.Float32bits(edge))+d)))
		}
	}
	return xs
}

func checkUnary(t *testing.T, name string, f func(dst, x []float32), ref func(float32) float32, maxULP int64) {
	xs := expInputs(t)
	got := make([]float32, len(xs))
	f(got, xs)
	worst, worstX := int64(0), float32(0)
	for i, x := range xs {
		d := ulps(got[i], ref(x))
		if d > maxULP {
			t.Fatalf("%s(%g) = %g (bits %#x), want %g (bits %#x): %d ulp", name, x, got[i],
				math.Float32bits(got[i]), ref(x), math.Float32bits(ref(x)), d)
		}
		if d > worst {
			worst, worstX = d, x
		}
	}
	t.Logf("%s: %d inputs, worst %d ulp at %g", name, len(xs), worst, worstX)
	// Tails: every length gives the same values as the long call.
	for _, n := range lengths {
		for _, off := range []int{0, 5} {
			if off+n > len(xs) {
				continue
			}
			part := make([]float32, n)
			f(part, xs[off:off+n])
			sameBits(t, fmt.Sprintf("%s n=%d off=%d", name, n, off), part, got[off:off+n])
		}
	}
}

func TestExpULP(t *testing.T) {
	forEachImpl(t, func(t *testing.T) { checkUnary(t, "Exp", Exp, refExp, 2) })
}

func TestLogisticULP(t *testing.T) {
	forEachImpl(t, func(t *testing.T) { checkUnary(t, "Logistic", Logistic, refLogistic, 3) })
}

func TestExpEdges(t *testing.T) {
	inf := float32(math.Inf(1))
	cases := []struct{ x, want float32 }{
		{inf, inf}, {float32(math.Inf(-1)), 0}, {0, 1}, {100, inf}, {-200, 0}, {math.MaxFloat32, inf}, {-math.MaxFloat32, 0},
	}
	forEachImpl(t, func(t *testing.T) {
		for _, c := range cases {
			got := []float32{0}
			Exp(got, []float32{c.x})
			if got[0] != c.want {
				t.Errorf("Exp(%g) = %g, want %g", c.x, got[0], c.want)
			}
		}
		got := []float32{0}
		Exp(got, []float32{float32(math.NaN())})
		if got[0] == got[0] {
			t.Errorf("Exp(NaN) = %g, want NaN", got[0])
		}
		// Logistic saturates without NaN.
		in := []float32{inf, float32(math.Inf(-1)), 1e30, -1e30, 100, -200, 0}
		want := []float32{1, 0, 1, 0, 1, 0, 0.5}
		out := make([]float32, len(in))
		Logistic(out, in)
		sameBits(t, "Logistic saturation", out, want)
	})
}

func TestUseUnsupported(t *testing.T) {
	if _, err := Use(Impl(42)); err == nil {
		t.Fatal("Use(Impl(42)) succeeded")
	}
}

func TestWhere(t *testing.T) {
	forEachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, n := range lengths {
			cond := make([]bool, n)
			for i := range cond {
				cond[i] = r.IntN(2) == 0
			}
			tv, fv := randomSlice(r, n), randomSlice(r, n)
			ts, fs := []float32{7}, []float32{-3}
			for _, c := range []struct {
				name string
				t, f []float32
			}{{"vv", tv, fv}, {"vs", tv, fs}, {"sv", ts, fv}, {"ss", ts, fs}} {
				want := make([]float32, n)
				for i := range want {
					src := c.f
					if cond[i] {
						src = c.t
					}
					want[i] = src[min(i, len(src)-1)]
				}
				got := make([]float32, n)
				Where(got, cond, c.t, c.f)
				sameBits(t, fmt.Sprintf("Where %s n=%d", c.name, n), got, want)
			}
		}
	})
}

// BenchmarkExp runs Exp over 16K values, normal ones and a causal
// attention's masked scores (every other value far below the 0
// threshold), which must cost no more than normal ones.
func BenchmarkExp(b *testing.B) {
	for _, c := range []struct {
		name string
		fill float32
	}{{"normal", -3}, {"masked", -1e30}} {
		b.Run(c.name, func(b *testing.B) {
			x, dst := make([]float32, 1<<14), make([]float32, 1<<14)
			for i := range x {
				x[i] = -1
				if i%2 == 0 {
					x[i] = c.fill
				}
			}
			b.SetBytes(4 << 14)
			for b.Loop() {
				Exp(dst, x)
			}
		})
	}
}
