package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestChooseFastMatchesSlow checks that the fast sampling path picks the
// same token as the per-candidate math.Exp loop for every configuration it
// serves (and those it hands back): temperatures, top-p, min-p, top-k,
// banned tokens (−Inf), logits spread far enough that weights underflow,
// and u at the ends of [0, 1).
func TestChooseFastMatchesSlow(t *testing.T) {
	defer func() { fastChoose = true }()
	r := rand.New(rand.NewPCG(3, 4))
	var fast, slow chooseScratch
	for _, V := range []int{1, 7, 1000, 49152} {
		for _, spread := range []float64{0.5, 3, 400} {
			logits := make([]float32, V)
			for i := range logits {
				logits[i] = float32(r.NormFloat64() * spread)
			}
			if V > 10 {
				logits[3], logits[V-2] = float32(math.Inf(-1)), float32(math.Inf(-1))
			}
			for _, cfg := range []GenerateConfig{
				{Sampling: Sampling{Temperature: 1}}, {Sampling: Sampling{Temperature: 0.7}}, {Sampling: Sampling{Temperature: 1.9}}, {Sampling: Sampling{Temperature: 1, TopP: 0.9}},
				{Sampling: Sampling{Temperature: 0.8, MinP: 0.05}}, {Sampling: Sampling{Temperature: 1, TopK: 5}}, {Sampling: Sampling{Temperature: 1, TopK: V + 1}},
				{Sampling: Sampling{Temperature: 1.2, TopP: 0.5, MinP: 0.01}},
			} {
				for _, u := range []float64{0, 1e-300, 0.25, 0.5, r.Float64(), 0.999999, math.Nextafter(1, 0)} {
					fastChoose = true
					got := choose(&fast, logits, nil, cfg, u)
					fastChoose = false
					want := choose(&slow, logits, nil, cfg, u)
					if got != want {
						t.Fatalf("V=%d spread=%g cfg=%+v u=%g: fast path picked %d, math.Exp loop %d", V, spread, cfg, u, got, want)
					}
				}
			}
		}
	}
}

// TestChooseFastTaken makes sure the rollouts' configuration takes the
// fast path (else the test above compares the slow path with itself).
func TestChooseFastTaken(t *testing.T) {
	var sc chooseScratch
	logits := []float32{1, 2, 3, 4, 5}
	if _, _, _, ok := chooseFast(&sc, logits, nil, GenerateConfig{Sampling: Sampling{Temperature: 1}}, 0.5); !ok {
		t.Fatal("temperature-1 sampling over the whole vocabulary did not take the fast path")
	}
	if _, _, _, ok := chooseFast(&sc, logits, []int{1, 2}, GenerateConfig{Sampling: Sampling{Temperature: 1}}, 0.5); ok {
		t.Fatal("a constrained row took the fast path")
	}
}
