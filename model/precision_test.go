package model

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// TestGoldenLogitsBF16 runs llama-tiny and qwen2-tiny with Compute
// BFloat16 and compares with logits_bf16, transformers' forward with the
// whole model in torch.bfloat16 (golden/README.md: a loose reference, mean
// |diff| ≤ 0.1 and max |diff| ≤ 1.0 at real tokens; HF's own bf16 logits
// differ from its f32 forward on bf16-rounded weights by mean 0.04, max
// 0.45); the forward must also be no farther from logits_bf16 than that
// error of HF's own. Both weight files are tried: model.bf16.safetensors holds the
// weights torch rounded to nearest even, model.safetensors the f32 ones,
// which the graph casts (to nearest even: internal/backend's bf16 hook).
// The bound alone would pass an f32 forward too, so the test also checks
// that the bf16 rounding moves the logits by as much as HF's does.
func TestGoldenLogitsBF16(t *testing.T) {
	for _, name := range []string{"llama-tiny", "qwen2-tiny"} {
		for _, file := range []string{"model.bf16.safetensors", ""} {
			t.Run(name+"/"+file, func(t *testing.T) {
				g := loadGolden(t, name)
				m, err := Load(g.dir, &Options{WeightsFile: file, Compute: dtypes.BFloat16})
				if err != nil {
					t.Fatal(err)
				}
				got, err := m.Logits(g.batch())
				if err != nil {
					t.Fatal(err)
				}
				want := g.tensors["logits_bf16"]
				mean, worst := diffStats(got, want.Data, g.JSON.AttentionMask, want.Shape[2])
				// The same comparison for the f32 forward, to show that the
				// bf16 path is closer to HF's bf16 numbers than f32 is.
				ref := g.tensors["logits_bf16w"]
				meanW, worstW := diffStats(ref.Data, want.Data, g.JSON.AttentionMask, want.Shape[2])
				// The rounding must really happen, and by as much as HF's: an
				// f32 forward would be within 2e-4 of logits_bf16w and still
				// pass the loose bound above. (The two rounding errors are
				// not correlated element by element, cosine ≈ 0: different
				// roundings early on propagate differently; their size is
				// what a bf16 forward fixes.)
				meanR, _ := diffStats(got, ref.Data, g.JSON.AttentionMask, want.Shape[2])
				t.Logf("vs logits_bf16: mean |diff| %.4f, max %.4f; own rounding (vs logits_bf16w) mean %.4f, HF's %.4f (max %.4f)",
					mean, worst, meanR, meanW, worstW)
				if math.IsNaN(mean) || mean > 0.1 || worst > 1.0 {
					t.Errorf("bf16 logits: mean |diff| %.4f (want ≤ 0.1), max %.4f (want ≤ 1.0)", mean, worst)
				}
				// Rounding like transformers (every bf16 result to nearest
				// even, products and bias sums in float32 rounded once), the
				// forward lands closer to transformers' bf16 logits than
				// transformers' own bf16 rounding moves them.
				if mean > meanW || worst > worstW {
					t.Errorf("bf16 logits differ from transformers' by mean %.4f, max %.4f: more than transformers' own bf16 error (mean %.4f, max %.4f)",
						mean, worst, meanW, worstW)
				}
				if meanR < meanW/2 || meanR > 2*meanW {
					t.Errorf("bf16 rounding moves the logits by mean %.4g from the f32 forward, HF's by %.4g: want within 2×", meanR, meanW)
				}
			})
		}
	}
}

// diffStats returns the mean and max |got − want| over real tokens of flat
// [B*T*inner] logits.
func diffStats(got, want []float32, mask [][]int, inner int) (mean, worst float64) {
	T := len(mask[0])
	n := 0
	for b := range mask {
		for ti := range T {
			if mask[b][ti] == 0 {
				continue
			}
			for k := range inner {
				i := (b*T+ti)*inner + k
				d := math.Abs(float64(got[i] - want[i]))
				if d != d {
					return math.NaN(), math.NaN()
				}
				mean += d
				worst = max(worst, d)
				n++
			}
		}
	}
	return mean / float64(n), worst
}
