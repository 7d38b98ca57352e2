//go:build amd64 && !purego

package exp64

import "golang.org/x/sys/cpu"

// haveVector: math.Exp takes its FMA branch exactly when the CPU has AVX
// and FMA (math's useFMA); the loop also needs AVX2.
var haveVector = cpu.X86.HasAVX && cpu.X86.HasAVX2 && cpu.X86.HasFMA

// shiftedExpAVX2 sets dst[i] = exp(float64(src[i])/t − shift) for i < n (a
// multiple of 4) by math.Exp's FMA-branch sequence, dividing by t only when
// div != 0, and returns how many arguments were beyond ±700 or not finite
// (their dst values are to be recomputed).
//
//go:noescape
func shiftedExpAVX2(dst *float64, src *float32, n int, t, shift float64, div int) int
