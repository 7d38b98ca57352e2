package vec32

import "math"

// The portable loops: plain Go, used for the tails of the assembly loops
// and by the Portable family.

func binaryGo(op Op, dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	switch op {
	case Add:
		for i := range dst {
			dst[i] = a[i] + b[i]
		}
	case Sub:
		for i := range dst {
			dst[i] = a[i] - b[i]
		}
	case Mul:
		for i := range dst {
			dst[i] = a[i] * b[i]
		}
	case Div:
		for i := range dst {
			dst[i] = a[i] / b[i]
		}
	}
}

func binaryScalarGo(op Op, dst, a []float32, c float32) {
	a = a[:len(dst)]
	switch op {
	case Add:
		for i := range dst {
			dst[i] = a[i] + c
		}
	case Sub:
		for i := range dst {
			dst[i] = a[i] - c
		}
	case Mul:
		for i := range dst {
			dst[i] = a[i] * c
		}
	case Div:
		for i := range dst {
			dst[i] = a[i] / c
		}
	}
}

func scalarBinaryGo(op Op, dst []float32, c float32, b []float32) {
	b = b[:len(dst)]
	switch op {
	case Add:
		for i := range dst {
			dst[i] = c + b[i]
		}
	case Sub:
		for i := range dst {
			dst[i] = c - b[i]
		}
	case Mul:
		for i := range dst {
			dst[i] = c * b[i]
		}
	case Div:
		for i := range dst {
			dst[i] = c / b[i]
		}
	}
}

// Bounds past which float32 e^x is 0 or +Inf (e^−104 = 2^−150.04 rounds
// to 0, e^89 = 2^128.4 overflows).
const (
	expLo = -104
	expHi = 89
)

// exp64 returns e^x for expLo ≤ x ≤ expHi in float64, accurate to a few
// float64 ulp: x = n·ln2 + r, |r| ≤ ln2/2, e^r by its Taylor series to
// r⁸ (truncation below 3e-9 relative), times 2^n built from bits.
func exp64(x float64) float64 {
	n := math.Floor(x*math.Log2E + 0.5)
	r := x - n*math.Ln2
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040+r*(1.0/40320))))))))
	return p * math.Float64frombits(uint64(int64(n)+1023)<<52)
}

// exp32 is e^x rounded once to float32 (so through the subnormals).
func exp32(x float32) float32 {
	switch {
	case x != x:
		return x
	case x < expLo:
		return 0
	case x > expHi:
		return float32(math.Inf(1))
	}
	return float32(exp64(float64(x)))
}

// logistic32 is 1/(1+e^−x), from t = e^−|x| so it never overflows.
func logistic32(x float32) float32 {
	if x != x {
		return x
	}
	ax := math.Abs(float64(x))
	t := 0.0
	if ax < -expLo {
		t = exp64(-ax)
	}
	if x < 0 {
		return float32(t / (1 + t))
	}
	return float32(1 / (1 + t))
}
