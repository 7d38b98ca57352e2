package model

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

func TestChooseForms(t *testing.T) {
	caps := func(ops ...backends.OpType) backends.Capabilities {
		c := backends.Capabilities{Operations: map[backends.OpType]bool{}}
		for _, op := range ops {
			c.Operations[op] = true
		}
		return c
	}
	rotOps := []backends.OpType{backends.OpTypeSlice, backends.OpTypeConcatenate, backends.OpTypeNeg, backends.OpTypePad}
	for _, tc := range []struct {
		name string
		caps backends.Capabilities
		want graphForms
	}{
		// SimpleGo (gomlx v0.26.0): no Pad, no DynamicUpdateSlice; ScatterSum.
		{"simplego", simplego.Capabilities, graphForms{scatterWrite: true}},
		{"no scatter", caps(backends.OpTypeSlice), graphForms{}},
		{"xla-like", caps(append(rotOps, backends.OpTypeDynamicUpdateSlice)...), graphForms{dynamicUpdate: true, sliceRotate: true}},
		{"no Pad", caps(backends.OpTypeSlice, backends.OpTypeConcatenate, backends.OpTypeNeg, backends.OpTypeDynamicUpdateSlice), graphForms{dynamicUpdate: true}},
		{"no DynamicUpdateSlice", caps(rotOps...), graphForms{sliceRotate: true}},
	} {
		if got := chooseForms(tc.caps); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	m := tinyModel(t)
	if got := m.forms(); got != (graphForms{scatterWrite: true}) {
		t.Errorf("the go backend gets %+v, want the workaround forms", got)
	}
}

// TestSliceRotateForm forces the Slice/Neg/Concatenate rotate_half (the
// native form for XLA) on the pure-Go backend, which can run it thanks to
// internal/vjp's Slice gradient: logits and gradients must equal the ±1
// product form's, and the logits still match the golden files.
func TestSliceRotateForm(t *testing.T) {
	for _, name := range []string{"llama-tiny", "qwen2-tiny", "qwen3-tiny", "gemma3-tiny"} {
		t.Run(name, func(t *testing.T) {
			g := loadGolden(t, name)
			run := func(f *graphForms) ([]float32, []*tensors.Tensor) {
				formsOverride = f
				defer func() { formsOverride = nil }()
				m, err := Load(g.dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := m.fwd(m.Context(), false).forms, chooseForms(simplego.Capabilities); f != nil && got != *f || f == nil && got != want {
					t.Fatalf("forward built with forms %+v", got)
				}
				logits, err := m.Logits(g.batch())
				if err != nil {
					t.Fatal(err)
				}
				_, grads, _ := lossAndGrads(t, m, g.batch())
				return logits, grads
			}
			wantL, wantG := run(nil)
			gotL, gotG := run(&graphForms{sliceRotate: true})
			want := g.tensors["logits"]
			checkClose(t, "logits (slice rotate)", gotL, want.Data, g.JSON.AttentionMask, want.Shape[2], 2e-4, 2e-4)
			checkClose(t, "logits (slice vs product)", gotL, wantL, g.JSON.AttentionMask, want.Shape[2], 1e-5, 1e-5)
			worst := 0.0
			for i := range wantG {
				a, b := tensors.MustCopyFlatData[float32](gotG[i]), tensors.MustCopyFlatData[float32](wantG[i])
				for j := range b {
					d := math.Abs(float64(a[j] - b[j]))
					worst = max(worst, d)
					if d > 1e-5+1e-4*math.Abs(float64(b[j])) {
						t.Fatalf("gradient %d[%d]: slice form %g, product form %g", i, j, a[j], b[j])
					}
				}
			}
			t.Logf("gradients: max |slice − product| %.3g", worst)
		})
	}
}

// TestDynamicUpdateFormReachesBackend forces the DynamicUpdateSlice KV
// write on the pure-Go backend, which lacks the op: generation must fail
// with an error naming it (not panic), which shows the native form is the
// one built. Its numbers can only be checked on XLA (no PJRT plugin here).
func TestDynamicUpdateFormReachesBackend(t *testing.T) {
	formsOverride = &graphForms{dynamicUpdate: true}
	defer func() { formsOverride = nil }()
	m := tinyModel(t)
	_, err := m.Generate(context.Background(), [][]int{{1, 5, 9}}, GenerateConfig{MaxNewTokens: 2, IgnoreEOS: true})
	if err == nil || !strings.Contains(err.Error(), "DynamicUpdateSlice") {
		t.Fatalf("err = %v, want SimpleGo's DynamicUpdateSlice error", err)
	}
}

// TestScatterWriteMatchesWhere runs greedy and sampled generation with the
// in-place ScatterSum KV write (SimpleGo's default) and with the Where
// form over the whole cache: every step's logits and every cache after
// every step must be bit-identical (the scatter adds into zeros). gemma3
// also covers ring-buffer layers (sliding windows of 3 and 5, which reuse
// slots and keep the Where form, and 20, which does not).
func TestScatterWriteMatchesWhere(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window int
	}{{"llama-tiny", 0}, {"qwen3-tiny", 0}, {"gemma3-tiny", 3}, {"gemma3-tiny", 5}, {"gemma3-tiny", 20}} {
		t.Run(fmt.Sprintf("%s/window=%d", tc.name, tc.window), func(t *testing.T) {
			g := loadGolden(t, tc.name)
			prompts := goldenPrompts(g)
			run := func(f *graphForms) (logits [][]float32, caches [][][]float32) {
				formsOverride = f
				defer func() { formsOverride = nil }()
				m, err := Load(g.dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.window > 0 {
					m.cfg.SlidingWindow = tc.window
				}
				cfg := GenerateConfig{MaxNewTokens: 9, IgnoreEOS: true, NumGenerations: 3, Temperature: 1, Seed: 7}
				cfg.onStep = func(_ int, l []float32) { logits = append(logits, slices.Clone(l)) }
				cfg.onCaches = func(_ int, cs []*tensors.Tensor) {
					var step [][]float32
					for _, c := range cs {
						step = append(step, tensors.MustCopyFlatData[float32](c))
					}
					caches = append(caches, step)
				}
				if _, err := m.Generate(context.Background(), prompts, cfg); err != nil {
					t.Fatal(err)
				}
				return logits, caches
			}
			scatterL, scatterC := run(nil)
			whereL, whereC := run(&graphForms{})
			if len(scatterL) != 9 || len(scatterC) != 9 || len(whereL) != 9 || len(whereC) != 9 {
				t.Fatalf("saw %d/%d steps of logits, %d/%d of caches, want 9", len(scatterL), len(whereL), len(scatterC), len(whereC))
			}
			for s := range scatterL {
				if !slices.Equal(scatterL[s], whereL[s]) {
					t.Fatalf("step %d: logits differ between the scatter and Where forms", s)
				}
				for i := range scatterC[s] {
					if !slices.Equal(scatterC[s][i], whereC[s][i]) {
						t.Fatalf("step %d: cache %d differs between the scatter and Where forms", s, i)
					}
				}
			}
		})
	}
}
