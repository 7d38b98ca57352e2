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

	"github.com/grpokit/grpokit/internal/fused"
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
	if got := m.forms(); got != (graphForms{scatterWrite: true, fused: true}) {
		t.Errorf("the go backend gets %+v, want the workaround forms and fused chains", got)
	}
}

// TestSliceRotateForm forces the Slice/Neg/Concatenate rotate_half (the
// native form for XLA) and the plain element-wise chains on the pure-Go
// backend, which can run it thanks to internal/vjp's Slice gradient:
// logits and gradients must equal the default form's (fused chains,
// internal/fused), and the logits still match the golden files.
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
				want := chooseForms(simplego.Capabilities)
				want.fused = fused.Available(m.backend)
				if got := m.fwd(m.Context(), false).forms; f != nil && got != *f || f == nil && got != want {
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

// TestScatterWriteMatchesWhere checks that decoding with in-place ScatterSum
// writes, with the prompts' caches shared by their group (prefixcache.go)
// or copied into every row, gives the logits of the Where form (per-row
// caches rewritten whole) bit for bit at every step, and the same caches:
// the per-row caches equal, the shared layout's suffix slots equal the
// per-row caches' slots after the prompt, its carry slots cleared to zero.
func TestScatterWriteMatchesWhere(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window int
	}{{"llama-tiny", 0}, {"qwen3-tiny", 0}, {"gemma3-tiny", 3}, {"gemma3-tiny", 5}, {"gemma3-tiny", 20}} {
		t.Run(fmt.Sprintf("%s/window=%d", tc.name, tc.window), func(t *testing.T) {
			g := loadGolden(t, tc.name)
			prompts := goldenPrompts(g)
			const steps = 20 // the shared suffix caches grow from 16 to 32 to 48 slots
			var cfg Config
			run := func(f *graphForms, share bool) (logits [][]float32, caches [][][]float32, shapes [][][]int) {
				formsOverride, noSharedPrompt = f, !share
				defer func() { formsOverride, noSharedPrompt = nil, false }()
				m, err := Load(g.dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.window > 0 {
					m.cfg.SlidingWindow = tc.window
				}
				cfg = m.cfg
				gen := GenerateConfig{MaxNewTokens: steps, IgnoreEOS: true, NumGenerations: 3, Sampling: Sampling{Temperature: 1}, Seed: 7}
				gen.onStep = func(_ int, l []float32) { logits = append(logits, slices.Clone(l)) }
				gen.onCaches = func(_ int, cs []*tensors.Tensor) {
					var step [][]float32
					var dims [][]int
					for _, c := range cs {
						step = append(step, tensors.MustCopyFlatData[float32](c))
						dims = append(dims, c.Shape().Dimensions)
					}
					caches, shapes = append(caches, step), append(shapes, dims)
				}
				if _, err := m.Generate(context.Background(), prompts, gen); err != nil {
					t.Fatal(err)
				}
				return logits, caches, shapes
			}
			sharedL, sharedC, sharedS := run(nil, true)
			scatterL, scatterC, _ := run(nil, false)
			whereL, whereC, whereS := run(&graphForms{}, true)
			if len(sharedL) != steps || len(scatterL) != steps || len(whereL) != steps || len(sharedC) != steps || len(scatterC) != steps || len(whereC) != steps {
				t.Fatalf("saw %d/%d/%d steps of logits, %d/%d/%d of caches, want %d", len(sharedL), len(scatterL), len(whereL), len(sharedC), len(scatterC), len(whereC), steps)
			}
			rep := cfg.NumAttentionHeads / cfg.NumKeyValueHeads
			row := cfg.NumKeyValueHeads * cfg.HeadDim
			for s := range steps {
				if !slices.Equal(scatterL[s], whereL[s]) || !slices.Equal(sharedL[s], whereL[s]) {
					t.Fatalf("step %d: logits differ between the forms (scatter %v, shared %v)", s, slices.Equal(scatterL[s], whereL[s]), slices.Equal(sharedL[s], whereL[s]))
				}
				for i := range whereC[s] {
					if !slices.Equal(scatterC[s][i], whereC[s][i]) {
						t.Fatalf("step %d: cache %d differs between the scatter and Where forms", s, i)
					}
					if cfg.IsSlidingLayer(i / 2) {
						if !slices.Equal(sharedC[s][i], whereC[s][i]) {
							t.Fatalf("step %d: ring cache %d differs between the shared and Where forms", s, i)
						}
						continue
					}
					// Per-row [N, S, nkv, hd]; shared suffix [N, carry+S-Tp, nkv, hd].
					N, S, Sx := whereS[s][i][0], whereS[s][i][1], sharedS[s][i][1]
					carry := 0
					if i%2 == 1 {
						carry = rep
					}
					Tp := bucket(len(slices.MaxFunc(prompts, func(a, b []int) int { return len(a) - len(b) })))
					if want := carry + min(bucket(s), S-Tp); Sx != want {
						t.Fatalf("step %d: cache %d has %d suffix slots, want %d", s, i, Sx, want)
					}
					for n := range N {
						got := sharedC[s][i][n*Sx*row : (n+1)*Sx*row]
						if slices.ContainsFunc(got[:carry*row], func(x float32) bool { return x != 0 }) {
							t.Fatalf("step %d: cache %d row %d: carry slots not cleared", s, i, n)
						}
						if want := whereC[s][i][(n*S+Tp)*row : (n*S+Tp+Sx-carry)*row]; !slices.Equal(got[carry*row:], want) {
							t.Fatalf("step %d: cache %d row %d: suffix differs from the per-row cache after the prompt", s, i, n)
						}
						if rest := whereC[s][i][(n*S+Tp+Sx-carry)*row : (n+1)*S*row]; slices.ContainsFunc(rest, func(x float32) bool { return x != 0 }) {
							t.Fatalf("step %d: cache %d row %d: the per-row cache has tokens past the suffix", s, i, n)
						}
					}
				}
			}
		})
	}
}
