// Package adamw is the AdamW update of one float32 variable as a single
// pass over its weights, gradient and moments, split across the cores.
//
// grpo's update executable ran GoMLX's Adam as about a dozen graph ops per
// variable, each a full pass over the variable's memory (read two
// operands, write one); here each element is read once and written once:
// 16 bytes read and 12 written per parameter.
//
// The arithmetic is GoMLX's Adam (optimizers.Adam, v0.26.0) op for op, in
// float32 with each operation rounded as the graph rounds it (every
// product is converted explicitly, so the compiler cannot fuse a multiply
// and an add), so the results are those of the graph bit for bit. On
// CPUs with AVX-512 the same operations run 16 lanes at a time (Go
// assembly; the square root and division round correctly in both), about
// six times faster than the scalar loop, whose float64 square root and
// division per element bound it.
package adamw

import (
	"math"
	"runtime"

	"github.com/grpokit/grpokit/internal/fork"
)

// Params are the scalars of one AdamW step, as the graph computes them
// (float32): Beta1 and OneMinusBeta1 (1−β₁ rounded as float32
// arithmetic rounds it), the same for β₂, Debias1 = 1/(1−β₁ᵗ), Debias2 =
// 1/(1−β₂ᵗ), the learning rate, ε and the weight decay λ (0: none).
// GradScale, when not 0 or 1, multiplies each gradient value first (a
// clipping coefficient; the product is rounded to float32 as a graph's
// Mul rounds it).
type Params struct {
	LR, Beta1, OneMinusBeta1, Beta2, OneMinusBeta2 float32
	Debias1, Debias2, Epsilon, WeightDecay         float32
	GradScale                                      float32
}

// minChunk is the number of parameters below which a variable is updated
// on the calling goroutine alone (the start and join of a goroutine cost
// more than the pass).
const minChunk = 1 << 15

// Step updates w, m1 and m2 in place from gradient g (all the same
// length), with g read as g·GradScale when GradScale is set:
//
//	m1 ← β₁·m1 + (1−β₁)·g
//	m2 ← β₂·m2 + (1−β₂)·g²
//	w  ← w − (lr·(m1·d₁) / (√(m2·d₂) + ε) + lr·(λ·w))
//
// with the last term only when λ > 0. It panics if the lengths differ.
func Step(p Params, w, g, m1, m2 []float32) {
	n := len(w)
	if len(g) != n || len(m1) != n || len(m2) != n {
		panic("adamw: Step: slices of different lengths")
	}
	nt := min(runtime.GOMAXPROCS(0), n/minChunk)
	if nt <= 1 {
		step(p, w, g, m1, m2)
		return
	}
	chunk := (n + nt - 1) / nt
	fork.Run((n+chunk-1)/chunk, func(t int) {
		lo, hi := t*chunk, min((t+1)*chunk, n)
		step(p, w[lo:hi], g[lo:hi], m1[lo:hi], m2[lo:hi])
	})
}

// vecOn, when false (tests), leaves every element to step's Go loop.
var vecOn = true

// step is Step on one goroutine: the whole 16-element blocks on AVX-512
// where the CPU has it (stepVec, the same operations), the rest here.
// The float32 conversions of products keep each operation rounded on its
// own (the Go spec lets an implementation fuse x*y+z otherwise).
func step(p Params, w, g, m1, m2 []float32) {
	g, m1, m2 = g[:len(w)], m1[:len(w)], m2[:len(w)]
	decay := p.WeightDecay > 0
	scale := p.GradScale != 0 && p.GradScale != 1
	done := stepVec(p, w, g, m1, m2, decay, scale)
	w, g, m1, m2 = w[done:], g[done:], m1[done:], m2[done:]
	for i, wi := range w {
		gi := g[i]
		if scale {
			gi = float32(gi * p.GradScale)
		}
		a := float32(p.Beta1*m1[i]) + float32(p.OneMinusBeta1*gi)
		m1[i] = a
		sq := float32(gi * gi)
		b := float32(p.Beta2*m2[i]) + float32(p.OneMinusBeta2*sq)
		m2[i] = b
		den := float32(math.Sqrt(float64(float32(b*p.Debias2)))) + p.Epsilon
		s := float32(p.LR*float32(a*p.Debias1)) / den
		if decay {
			s += float32(p.LR * float32(wi*p.WeightDecay))
		}
		w[i] = wi - s
	}
}
