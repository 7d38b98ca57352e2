// Package cpuimpl names the instruction-set families of grpokit's assembly
// (internal/gemm's matrix kernels, internal/vec32's element-wise loops) and
// keeps, for each of those packages, the family it uses: the best this CPU
// runs, or the one GRPOKIT_GEMM forces, so that one setting forces both.
package cpuimpl

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// Impl names a family of kernels.
type Impl int

const (
	// Portable is plain Go; it runs on every CPU.
	Portable Impl = iota
	// AVX2 is x86-64 assembly for CPUs with AVX2 and FMA.
	AVX2
	// AVX512 is x86-64 assembly for CPUs with AVX-512F.
	AVX512
)

// String returns the name that EnvVar accepts for i.
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

// EnvVar names the environment variable that forces a family at start-up
// ("portable", "avx2" or "avx512"); an unsupported or unknown value is
// ignored and the best supported family is used.
const EnvVar = "GRPOKIT_GEMM"

// Families holds one package's implementations, at most one per Impl, and
// the one in use. T is the package's table of functions for one family.
type Families[T any] struct {
	pkg    string
	byImpl map[Impl]*T
	implOf func(*T) Impl
	active atomic.Pointer[T]
}

// New returns the families of package pkg (named in errors), starting with
// the portable one; implOf reads a table's Impl.
func New[T any](pkg string, portable *T, implOf func(*T) Impl) *Families[T] {
	f := &Families[T]{pkg: pkg, byImpl: map[Impl]*T{Portable: portable}, implOf: implOf}
	f.active.Store(portable)
	return f
}

// Add registers the table of a family this CPU and build can run. Call it
// before Start, from the package's init.
func (f *Families[T]) Add(t *T) { f.byImpl[f.implOf(t)] = t }

// Start picks the family in use: the one EnvVar names if it is supported,
// else Best.
func (f *Families[T]) Start() {
	impl := f.Best()
	if want := strings.ToLower(os.Getenv(EnvVar)); want != "" {
		for i := range f.byImpl {
			if i.String() == want {
				impl = i
			}
		}
	}
	f.active.Store(f.byImpl[impl])
}

// Get returns impl's table, nil if this CPU or build cannot run it.
func (f *Families[T]) Get(impl Impl) *T { return f.byImpl[impl] }

// Supported reports whether this CPU (and build) can run impl.
func (f *Families[T]) Supported(impl Impl) bool { return f.byImpl[impl] != nil }

// Best returns the fastest family this CPU supports.
func (f *Families[T]) Best() Impl {
	for _, impl := range []Impl{AVX512, AVX2} {
		if f.Supported(impl) {
			return impl
		}
	}
	return Portable
}

// Load returns the table in use.
func (f *Families[T]) Load() *T { return f.active.Load() }

// Active returns the family in use.
func (f *Families[T]) Active() Impl { return f.implOf(f.active.Load()) }

// Use switches to impl and returns the family used before. It is meant for
// tests and benchmarks: calls running concurrently may use either family.
// It fails if the CPU or build cannot run impl.
func (f *Families[T]) Use(impl Impl) (previous Impl, err error) {
	t := f.byImpl[impl]
	if t == nil {
		return f.Active(), fmt.Errorf("%s: %v is not supported on this CPU", f.pkg, impl)
	}
	return f.implOf(f.active.Swap(t)), nil
}
