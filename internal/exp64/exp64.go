// Package exp64 computes math.Exp over many values at once, bit for bit
// what math.Exp returns on the same machine, for the sampler: exp of every
// logit of a row (a 49,152-token vocabulary at batch 32 is 1.6M calls per
// decode step) without changing a single sampled token.
//
// On amd64 with AVX2 and FMA, math.Exp runs its assembly's FMA branch (a
// fixed sequence of IEEE operations on one float64); the AVX2 loop here
// runs the same sequence on four lanes at a time, so every result is the
// same float64. Arguments that would take math.Exp's rarer branches
// (beyond ±700, where results turn denormal or overflow, or not finite) are recomputed
// by math.Exp itself. Elsewhere the loop is plain math.Exp.
package exp64

import "math"

// specialBound bounds the arguments the vector loop handles: within ±700
// its results are normal finite numbers (math.Exp's denormal branch starts
// near −708.4, its overflow near 709.8).
const specialBound = 700

// Shifted sets dst[i] = math.Exp(float64(src[i])/t − shift) for i <
// len(src), the softmax numerators of logits at temperature t against
// their maximum; t == 1 skips the (exact) division. dst must be at least
// as long as src.
func Shifted(dst []float64, src []float32, t, shift float64) {
	dst = dst[:len(src)]
	done := 0
	if n := len(src) &^ 3; n > 0 && haveVector {
		div := 1
		if t == 1 {
			div = 0
		}
		if shiftedExpAVX2(&dst[0], &src[0], n, t, shift, div) > 0 {
			for i, l := range src[:n] {
				if x := float64(l)/t - shift; !(x >= -specialBound && x <= specialBound) {
					dst[i] = math.Exp(x)
				}
			}
		}
		done = n
	}
	for i := done; i < len(src); i++ {
		dst[i] = math.Exp(float64(src[i])/t - shift)
	}
}
