package model

import (
	"math"
	"testing"

	"github.com/grpokit/grpokit/internal/backend"
)

// TestFusedLowpMatchesDequantized: with bf16, NF4 (with and without double
// quantization) and int8 bases, the fused products (the weight decoded
// while gemm packs it, never widened whole) give bit-identical logits and
// gradients (through g·W, to the trainable norms and biases) as the
// separate in-graph dequantization they replace.
func TestFusedLowpMatchesDequantized(t *testing.T) {
	for _, name := range []string{"llama-tiny", "qwen2-tiny", "gemma3-tiny"} {
		for _, o := range []Options{{Storage: StorageBF16}, {Storage: StorageNF4}, {Storage: StorageNF4, DoubleQuant: true}, {Storage: StorageInt8}} {
			t.Run(name+"/"+string(o.Storage), func(t *testing.T) {
				g := loadGolden(t, name)
				m, err := Load(g.dir, &o)
				if err != nil {
					t.Fatal(err)
				}
				if !backend.FusedLowp(m.Backend()) {
					t.Fatal("the go backend does not fuse low-precision products")
				}
				run := func(fused bool) ([]float32, float64, [][]float32) {
					defer func(v bool) { fuseLowp = v }(fuseLowp)
					fuseLowp = fused
					m.resetExecs()
					n0 := backend.LowpProducts()
					logits, err := m.Logits(g.batch())
					if err != nil {
						t.Fatal(err)
					}
					loss, grads, _ := lossAndGrads(t, m, g.batch())
					if n := backend.LowpProducts() - n0; fused == (n == 0) {
						t.Fatalf("fused=%v: %d low-precision products ran", fused, n)
					}
					var gs [][]float32
					for _, x := range grads {
						gs = append(gs, x.Value().([]float32))
					}
					return logits, loss, gs
				}
				l1, loss1, g1 := run(true)
				l0, loss0, g0 := run(false)
				same := func(what string, a, b []float32) {
					for i := range a {
						if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
							t.Fatalf("%s[%d]: fused %g, dequantized %g", what, i, a[i], b[i])
						}
					}
				}
				same("logits", l1, l0)
				if loss1 != loss0 {
					t.Fatalf("loss: fused %g, dequantized %g", loss1, loss0)
				}
				if len(g1) == 0 || len(g1) != len(g0) {
					t.Fatalf("%d and %d gradients", len(g1), len(g0))
				}
				for i := range g1 {
					same("grad", g1[i], g0[i])
				}
			})
		}
	}
}
