package vec32

import (
	"github.com/grpokit/grpokit/internal/cpuimpl"
)

// Impl names a family of loops (see internal/cpuimpl).
type Impl = cpuimpl.Impl

// The families.
const (
	// Portable is the pure-Go family that runs on every CPU.
	Portable = cpuimpl.Portable
	// AVX2 is the assembly family for x86-64 CPUs with AVX2 and FMA.
	AVX2 = cpuimpl.AVX2
	// AVX512 is the assembly family for x86-64 CPUs with AVX-512F.
	AVX512 = cpuimpl.AVX512
)

// EnvVar names the environment variable that forces a family at start-up
// ("portable", "avx2" or "avx512"); an unsupported or unknown value is
// ignored. It is internal/gemm's, so one setting forces both packages.
const EnvVar = cpuimpl.EnvVar

// Op is an element-wise binary operation.
type Op uint8

// The binary operations.
const (
	Add Op = iota
	Sub
	Mul
	Div
	numOps
)

type (
	vvFunc  func(dst, a, b *float32, n int)
	vsFunc  func(dst, a *float32, c float32, n int)
	expFunc func(dst, x *float32, n int)
)

// family is one Impl's loops; nil entries run in Go. The binary loops
// handle multiples of block elements, exp and logistic of lanes.
type family struct {
	impl         Impl
	block, lanes int
	vv           [numOps]vvFunc // a op b
	vs, sv       [numOps]vsFunc // a op c and c op a
	exp, logit   expFunc
	where        [4]whereFunc // index 2·(t is one value) + (f is one value)
}

type whereFunc func(dst *float32, cond *bool, t, f *float32, n int)

// families holds the families this CPU runs and the one in use.
var families = cpuimpl.New("vec32", &family{impl: Portable}, func(f *family) Impl { return f.impl })

func init() {
	registerArch() // adds the assembly families this CPU supports
	families.Start()
}

// Supported reports whether this CPU (and build) can run impl.
func Supported(impl Impl) bool { return families.Supported(impl) }

// Best returns the fastest family this CPU supports.
func Best() Impl { return families.Best() }

// Active returns the family in use.
func Active() Impl { return families.Active() }

// Use makes the package use impl from now on and returns the family it
// used before. It is meant for tests and benchmarks; calls running
// concurrently may use either family. It fails if the CPU or build cannot
// run impl.
func Use(impl Impl) (previous Impl, err error) { return families.Use(impl) }

// Binary sets dst[i] = a[i] op b[i] for i < len(dst); a and b must be at
// least as long as dst.
func Binary(op Op, dst, a, b []float32) {
	n := len(dst)
	a, b = a[:n], b[:n]
	done := 0
	if f := families.Load(); f.vv[op] != nil && n >= f.block {
		done = n - n%f.block
		f.vv[op](&dst[0], &a[0], &b[0], done)
	}
	binaryGo(op, dst[done:], a[done:], b[done:])
}

// BinaryScalar sets dst[i] = a[i] op c for i < len(dst); a must be at
// least as long as dst.
func BinaryScalar(op Op, dst, a []float32, c float32) {
	n := len(dst)
	a = a[:n]
	done := 0
	if f := families.Load(); f.vs[op] != nil && n >= f.block {
		done = n - n%f.block
		f.vs[op](&dst[0], &a[0], c, done)
	}
	binaryScalarGo(op, dst[done:], a[done:], c)
}

// ScalarBinary sets dst[i] = c op b[i] for i < len(dst); b must be at
// least as long as dst.
func ScalarBinary(op Op, dst []float32, c float32, b []float32) {
	if op == Add || op == Mul { // commutative: the same IEEE result
		BinaryScalar(op, dst, b, c)
		return
	}
	n := len(dst)
	b = b[:n]
	done := 0
	if f := families.Load(); f.sv[op] != nil && n >= f.block {
		done = n - n%f.block
		f.sv[op](&dst[0], &b[0], c, done)
	}
	scalarBinaryGo(op, dst[done:], c, b[done:])
}

// Exp sets dst[i] = e^x[i] for i < len(dst); x must be at least as long
// as dst.
func Exp(dst, x []float32) {
	f := families.Load()
	unary(f, f.exp, exp32, dst, x)
}

// Logistic sets dst[i] = 1/(1+e^−x[i]) for i < len(dst); x must be at
// least as long as dst.
func Logistic(dst, x []float32) {
	f := families.Load()
	unary(f, f.logit, logistic32, dst, x)
}

// unary runs loop over whole registers and the tail through a padded
// register-sized copy, so every element gets the same arithmetic.
func unary(f *family, loop expFunc, scalar func(float32) float32, dst, x []float32) {
	n := len(dst)
	x = x[:n]
	if loop == nil {
		for i, v := range x {
			dst[i] = scalar(v)
		}
		return
	}
	m := n - n%f.lanes
	if m > 0 {
		loop(&dst[0], &x[0], m)
	}
	if m < n {
		var buf [16]float32
		copy(buf[:], x[m:])
		loop(&buf[0], &buf[0], f.lanes)
		copy(dst[m:], buf[:])
	}
}

// Where sets dst[i] = t[i] if cond[i], else f[i], for i < len(dst). t and f
// each hold len(dst) elements or a single one used for every i; cond must
// be at least as long as dst.
func Where(dst []float32, cond []bool, t, f []float32) {
	n := len(dst)
	cond = cond[:n]
	tS, fS := len(t) == 1, len(f) == 1
	if !tS {
		t = t[:n]
	}
	if !fS {
		f = f[:n]
	}
	form := 0
	if tS {
		form += 2
	}
	if fS {
		form++
	}
	done := 0
	if fam := families.Load(); fam.where[form] != nil && n >= fam.block {
		done = n - n%fam.block
		fam.where[form](&dst[0], &cond[0], &t[0], &f[0], done)
	}
	for i := done; i < n; i++ {
		v := f[0]
		if !fS {
			v = f[i]
		}
		if cond[i] {
			v = t[0]
			if !tS {
				v = t[i]
			}
		}
		dst[i] = v
	}
}
