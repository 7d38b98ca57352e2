// Package vec32 holds SIMD loops over float32 slices: element-wise Add,
// Sub, Mul and Div (two slices, or a slice and a scalar), Where (select
// by a bool slice), Exp and Logistic. internal/backend runs GoMLX SimpleGo's float32 element-wise
// ops on them (see simplego_elementwise.go there); nothing else in
// grpokit knows about this package.
//
// Three families exist: AVX2 (Go assembly, written by ./gen with go
// generate; needs FMA), AVX512 (AVX2's loops but for Exp and Logistic,
// which use ZMM registers: wider binary loops measured no faster, being
// bound by cache and memory bandwidth) and Portable (pure Go, every CPU).
// The best one the CPU supports is chosen at start-up with
// golang.org/x/sys/cpu; GRPOKIT_GEMM=portable|avx2|avx512 (the variable
// internal/gemm reads, so one setting forces both) or Use forces one, and
// the purego build tag leaves only Portable.
//
// Results: the binary ops and Where are exact (each element is one IEEE float32
// operation, as in plain Go). Exp is within 2 ulp of
// float32(math.Exp(float64(x))) over the whole float32 range, including
// +Inf above about 88.72, subnormals and 0 below about −87.3, and NaN for
// NaN; Logistic is 1/(1+e^−x) computed from e^−|x|, so it saturates to 0
// and 1 without NaN, within 3 ulp of the float64 result.
//
// All functions are safe for concurrent use; dst may be the same slice as
// an input (element i is read before it is written).
package vec32
