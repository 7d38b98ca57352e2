package backend

// The inner loops of the broadcasting float32 binary ops of
// simplego_elementwise.go: one loop per op and operand form, so that each
// compiles to a tight loop without a call per element.

import "math"

func pow32(a, b float32) float32 { return float32(math.Pow(float64(a), float64(b))) }

// binVecVec, binVecScalar and binScalarVec are the inner loops, one per op
// so that each compiles to a tight loop.
func binVecVec(op binOp, o, l, r []float32) {
	l, r = l[:len(o)], r[:len(o)]
	switch op {
	case opAdd:
		for i := range o {
			o[i] = l[i] + r[i]
		}
	case opSub:
		for i := range o {
			o[i] = l[i] - r[i]
		}
	case opMul:
		for i := range o {
			o[i] = l[i] * r[i]
		}
	case opDiv:
		for i := range o {
			o[i] = l[i] / r[i]
		}
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
	switch op {
	case opAdd:
		for i := range o {
			o[i] = l[i] + c
		}
	case opSub:
		for i := range o {
			o[i] = l[i] - c
		}
	case opMul:
		for i := range o {
			o[i] = l[i] * c
		}
	case opDiv:
		for i := range o {
			o[i] = l[i] / c
		}
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
	switch op {
	case opAdd:
		for i := range o {
			o[i] = c + r[i]
		}
	case opSub:
		for i := range o {
			o[i] = c - r[i]
		}
	case opMul:
		for i := range o {
			o[i] = c * r[i]
		}
	case opDiv:
		for i := range o {
			o[i] = c / r[i]
		}
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
