package gemm

import (
	"github.com/grpokit/grpokit/internal/cpuimpl"
)

// Impl names a family of micro-kernels (see internal/cpuimpl).
type Impl = cpuimpl.Impl

// The kernel families.
const (
	// Portable is the pure-Go kernel that runs on every CPU.
	Portable = cpuimpl.Portable
	// AVX2 is the 6×16 assembly kernel for x86-64 CPUs with AVX2 and FMA.
	AVX2 = cpuimpl.AVX2
	// AVX512 is the 12×32 assembly kernel for x86-64 CPUs with AVX-512F.
	AVX512 = cpuimpl.AVX512
)

// EnvVar names the environment variable that forces a kernel family at
// start-up ("portable", "avx2" or "avx512"); an unsupported or unknown value
// is ignored and the best supported family is used.
const EnvVar = cpuimpl.EnvVar

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
	// strided is optional: strided[r] for r < len(strided) rows of W in
	// W·xᵀ (see strided.go), on panels of stridedNR rows of x, for
	// products with stridedMin to stridedMaxRows rows of x.
	strided    []stridedKernel
	stridedNR  int
	stridedMin int
}

// packTFunc packs one full nr-column panel of a transposed B (see packB)
// whose column j starts at src[j*cs], kc elements deep, into dst. It
// reports false when it cannot, and the caller packs in Go.
type packTFunc func(dst, src []float32, cs, kc int) bool

// kernels holds the families this CPU runs and the one Gemm uses.
var kernels = cpuimpl.New("gemm", &kernel{impl: Portable, mr: portableMR, nr: portableNR, rows: portableRows[:]},
	func(k *kernel) Impl { return k.impl })

func init() {
	registerArch() // adds the assembly families this CPU supports
	kernels.Start()
}

// Supported reports whether this CPU (and build) can run impl.
func Supported(impl Impl) bool { return kernels.Supported(impl) }

// Best returns the fastest family this CPU supports.
func Best() Impl { return kernels.Best() }

// Active returns the family Gemm uses now.
func Active() Impl { return kernels.Active() }

// Use makes Gemm use impl from now on and returns the family it used before.
// It is meant for tests and benchmarks; calls running concurrently may use
// either family. It fails if the CPU or build cannot run impl.
func Use(impl Impl) (previous Impl, err error) { return kernels.Use(impl) }
