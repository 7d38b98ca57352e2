package backend

// The inner loops of the broadcasting float32 binary ops of
// simplego_elementwise.go. Add, Sub, Mul and Div run on internal/vec32's
// SIMD loops (the same as the same-shape ops of simplego_flatops.go); Max,
// Min and Pow have one plain loop per operand form here.

import (
	"math"

	"github.com/grpokit/grpokit/internal/vec32"
)

func pow32(a, b float32) float32 { return float32(math.Pow(float64(a), float64(b))) }

// binVecVec, binVecScalar and binScalarVec are the inner loops: o = l op r
// over one contiguous run.
func binVecVec(op binOp, o, l, r []float32) {
	l, r = l[:len(o)], r[:len(o)]
	if v, ok := vecOp(op); ok {
		vec32.Binary(v, o, l, r)
		return
	}
	switch op {
	case opMax:
		for i := range o {
			o[i] = max(l[i], r[i])
		}
	case opMin:
		for i := range o {
			o[i] = min(l[i], r[i])
		}
	case opPow:
		for i := range o {
			o[i] = pow32(l[i], r[i])
		}
	}
}

func binVecScalar(op binOp, o, l []float32, c float32) {
	l = l[:len(o)]
	if v, ok := vecOp(op); ok {
		vec32.BinaryScalar(v, o, l, c)
		return
	}
	switch op {
	case opMax:
		for i := range o {
			o[i] = max(l[i], c)
		}
	case opMin:
		for i := range o {
			o[i] = min(l[i], c)
		}
	case opPow:
		for i := range o {
			o[i] = pow32(l[i], c)
		}
	}
}

func binScalarVec(op binOp, o []float32, c float32, r []float32) {
	r = r[:len(o)]
	if v, ok := vecOp(op); ok {
		vec32.ScalarBinary(v, o, c, r)
		return
	}
	switch op {
	case opMax:
		for i := range o {
			o[i] = max(c, r[i])
		}
	case opMin:
		for i := range o {
			o[i] = min(c, r[i])
		}
	case opPow:
		for i := range o {
			o[i] = pow32(c, r[i])
		}
	}
}
