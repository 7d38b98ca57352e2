package gemm

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// Impl names a family of micro-kernels.
type Impl int

const (
	// Portable is the pure-Go kernel that runs on every CPU.
	Portable Impl = iota
	// AVX2 is the 6×16 assembly kernel for x86-64 CPUs with AVX2 and FMA.
	AVX2
	// AVX512 is the 12×32 assembly kernel for x86-64 CPUs with AVX-512F.
	AVX512
)

// String returns the name that GRPOKIT_GEMM accepts for i.
func (i Impl) String() string {
	switch i {
	case Portable:
		return "portable"
	case AVX2:
		return "avx2"
	case AVX512:
		return "avx512"
	}
	return fmt.Sprintf("Impl(%d)", int(i))
}

// EnvVar names the environment variable that forces a kernel family at
// start-up ("portable", "avx2" or "avx512"); an unsupported or unknown value
// is ignored and the best supported family is used.
const EnvVar = "GRPOKIT_GEMM"

// asmKernel is the signature of every micro-kernel: for i < rows (fixed per
// function) and j < nr it sets C[i*ldc+j] to Σ_{p<k} A[p*mr+i]·B[p*ldb+j],
// adding to the old value when accum != 0. A is a packed, zero-padded
// mr-row panel; B is a packed panel (ldb = nr) or a row-major matrix read in
// place. ldb and ldc count elements.
type asmKernel func(k int, a, b *float32, ldb int, c *float32, ldc int, accum int)

// kernel is one family: its tile and one function per row count.
type kernel struct {
	impl   Impl
	mr, nr int
	rows   []asmKernel // rows[r] handles an r-row tile, 1 ≤ r ≤ mr
	packT  packTFunc   // optional fast packing of full transposed B panels
	dot    []dotKernel // optional: dot[r] for r < len(dot) rows of A·Bᵀ (see dot.go)
}

// packTFunc packs one full nr-column panel of a transposed B (see packB)
// whose column j starts at src[j*cs], kc elements deep, into dst. It
// reports false when it cannot, and the caller packs in Go.
type packTFunc func(dst, src []float32, cs, kc int) bool

var kernels = map[Impl]*kernel{
	Portable: {impl: Portable, mr: portableMR, nr: portableNR, rows: portableRows[:]},
}

// active is the kernel family Gemm uses.
var active atomic.Pointer[kernel]

func init() {
	registerArch() // adds the assembly families this CPU supports
	best := Best()
	if want := strings.ToLower(os.Getenv(EnvVar)); want != "" {
		for impl := range kernels {
			if impl.String() == want {
				best = impl
			}
		}
	}
	active.Store(kernels[best])
}

// Supported reports whether this CPU (and build) can run impl.
func Supported(impl Impl) bool { return kernels[impl] != nil }

// Best returns the fastest family this CPU supports.
func Best() Impl {
	for _, impl := range []Impl{AVX512, AVX2} {
		if Supported(impl) {
			return impl
		}
	}
	return Portable
}

// Active returns the family Gemm uses now.
func Active() Impl { return active.Load().impl }

// Use makes Gemm use impl from now on and returns the family it used before.
// It is meant for tests and benchmarks; calls running concurrently may use
// either family. It fails if the CPU or build cannot run impl.
func Use(impl Impl) (previous Impl, err error) {
	k := kernels[impl]
	if k == nil {
		return Active(), fmt.Errorf("gemm: kernel %v is not supported on this CPU", impl)
	}
	return active.Swap(k).impl, nil
}
