//go:build amd64 && !purego

package adamw

import "golang.org/x/sys/cpu"

// stepAVX512 is step over n elements, n a multiple of 16 (step_amd64.s).
//
//go:noescape
func stepAVX512(p *Params, w, grad, mom1, mom2 *float32, n int, decay, scale bool)

// hasAVX512 is whether this CPU (and OS) runs stepAVX512.
var hasAVX512 = cpu.X86.HasAVX512F

// stepVec runs the whole 16-element blocks of w on AVX-512 when the CPU
// has it and returns how many elements it did.
func stepVec(p Params, w, g, m1, m2 []float32, decay, scale bool) int {
	n := len(w) &^ 15
	if !hasAVX512 || !vecOn || n == 0 {
		return 0
	}
	stepAVX512(&p, &w[0], &g[0], &m1[0], &m2[0], n, decay, scale)
	return n
}
