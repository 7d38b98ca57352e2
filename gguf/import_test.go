package gguf

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/grpokit/grpokit/internal/sharedtest"
	"github.com/grpokit/grpokit/model"
)

// ggufLogits returns the logits of each prompt of the model LoadModel reads
// from path.
func ggufLogits(t *testing.T, path string, prompts [][]int) [][][]float32 {
	t.Helper()
	m, err := LoadModel(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	V := m.Config().VocabSize
	var out [][][]float32
	for _, p := range prompts {
		lg, err := m.Logits(model.LeftPad([][]int{p}, 0, len(p)))
		if err != nil {
			t.Fatal(err)
		}
		var rows [][]float32
		for i := range p {
			rows = append(rows, lg[i*V:(i+1)*V])
		}
		out = append(out, rows)
	}
	return out
}

func maxAbsDiff(a, b [][][]float32) float64 {
	d := 0.0
	for i := range a {
		for j := range a[i] {
			for k := range a[i][j] {
				d = math.Max(d, math.Abs(float64(a[i][j][k]-b[i][j][k])))
			}
		}
	}
	return d
}

// TestExportImportRoundTrip writes every golden model as a GGUF file of
// each type and reads it back: F32 gives the original folder's logits bit
// for bit; the other types give, bit for bit, the logits of the original
// weights stored in the type and decoded as ggml does (storedWeights,
// which decodes independently of Dequantize), and stay within a bound of
// the original.
func TestExportImportRoundTrip(t *testing.T) {
	tmp := t.TempDir()
	// Bounds on |logit - original logit| for each type (the golden logits
	// are of order 1): measured 0 (F32), and for the others well inside.
	bound := map[string]float64{"F32": 1e-4, "F16": 0.1, "BF16": 0.5, "Q8_0": 0.5, "Q4_0": 2}
	llama := sharedtest.Dir(t, "golden", "llama-tiny")
	gemma := sharedtest.Dir(t, "golden", "gemma3-tiny")
	dirs := map[string]string{
		// Llama 3's RoPE scaling, read back from rope_freqs.weight.
		"llama-rope-llama3": llamaRopeScaled(t, tmp, llama),
		// Gemma's sliding pattern and linear RoPE scaling from the metadata.
		"gemma3-pattern6-linear": gemmaPattern6(t, tmp, gemma, &model.RopeScaling{RopeType: "linear", Factor: 8}),
		"gemma3-all-sliding":     gemmaAllSliding(t, tmp, gemma),
	}
	cases := append([]string{"llama-rope-llama3", "gemma3-pattern6-linear", "gemma3-all-sliding"}, goldenCases...)
	for _, c := range cases {
		dir, ok := dirs[c]
		if !ok {
			dir = sharedtest.Dir(t, "golden", c)
		}
		ref := readGolden(t, sharedtest.Dir(t, "golden", map[bool]string{true: "llama-tiny", false: "gemma3-tiny"}[c == "llama-rope-llama3"]))
		if !ok {
			ref = readGolden(t, dir)
		}
		orig := grpokitLogits(t, dir, ref.prompts)
		for _, dtype := range []string{"F32", "F16", "BF16"} {
			t.Run(c+"/"+dtype, func(t *testing.T) {
				path := filepath.Join(tmp, fmt.Sprintf("%s-%s.gguf", c, dtype))
				if _, err := Export(context.Background(), Source{ModelDir: dir}, path, ExportOptions{DType: dtype}); err != nil {
					t.Fatal(err)
				}
				got := ggufLogits(t, path, ref.prompts)
				want := orig
				if dtype != "F32" {
					want = grpokitLogits(t, storedWeights(t, filepath.Join(tmp, c+"-"+dtype+"-stored"), dir, dtype), ref.prompts)
				}
				// Gemma's query_pre_attn_scalar, where it differs from
				// llama.cpp's assumption, is folded into the query norm on
				// export and read back as a rescaled norm: the same model
				// up to rounding.
				exact := 0.0
				if m, err := model.Load(dir, nil); err == nil && gemmaQueryScale(m.Config()) != 1 {
					exact = 1e-4
				}
				if d := maxAbsDiff(got, want); d > exact {
					t.Errorf("logits differ from the stored weights' by up to %g, want at most %g", d, exact)
				}
				if d := maxAbsDiff(got, orig); d > bound[dtype] {
					t.Errorf("logits differ from the original's by up to %g, want at most %g", d, bound[dtype])
				} else {
					t.Logf("max |logit - original| = %.3g", d)
				}
			})
		}
	}
}
