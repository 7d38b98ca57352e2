package gguf

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/tokenizer"
)

// transformersRef is what testdata/smollm2/reference.py writes:
// transformers' own GGUF loader on the real file.
type transformersRef struct {
	Versions map[string]string `json:"versions"`
	Prompts  []struct {
		Text      string      `json:"text"`
		IDs       []int       `json:"ids"`
		TopIDs    [][]int     `json:"top_ids"`
		TopLogits [][]float64 `json:"top_logits"`
		Greedy    []int       `json:"greedy"`
	} `json:"prompts"`
}

func readTransformersRef(t *testing.T) transformersRef {
	t.Helper()
	var ref transformersRef
	b, err := os.ReadFile(filepath.Join("testdata", "smollm2", "transformers.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Prompts) != 20 {
		t.Fatalf("transformers.json holds %d prompts, want 20", len(ref.Prompts))
	}
	return ref
}

// smollm2 loads the real model once per test binary.
var smollm2Cache struct {
	m   *model.Model
	tok *tokenizer.Pretrained
}

func loadSmolLM2(t *testing.T) (*model.Model, *tokenizer.Pretrained) {
	t.Helper()
	path := smollm2Path(t)
	if smollm2Cache.m == nil {
		start := time.Now()
		m, tok, err := LoadPretrained(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("loaded %s in %v", filepath.Base(path), time.Since(start))
		smollm2Cache.m, smollm2Cache.tok = m, tok
	}
	return smollm2Cache.m, smollm2Cache.tok
}

// chatIDs renders a one-message chat through the file's own template and
// encodes it, as grpokit's trainer does.
func chatIDs(t *testing.T, tok *tokenizer.Pretrained, text string) []int {
	t.Helper()
	s, err := tok.ApplyChat([]tokenizer.Message{{Role: "user", Content: text}}, tokenizer.ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Tokenizer.Encode(s, false)
}

// TestSmolLM2Transformers compares grpokit on the real SmolLM2-135M-Instruct
// GGUF with transformers' own GGUF loader on the same file (both float32
// on the same dequantized weights): the chat template's ids, the 16
// largest logits at every position of 20 prompts, and 32 greedy tokens.
func TestSmolLM2Transformers(t *testing.T) {
	m, tok := loadSmolLM2(t)
	ref := readTransformersRef(t)
	V := m.Config().VocabSize
	worst, argmaxSame, positions := 0.0, 0, 0
	var prompts [][]int
	for _, p := range ref.Prompts {
		if got := chatIDs(t, tok, p.Text); !slices.Equal(got, p.IDs) {
			t.Errorf("%q: grpokit's chat ids %v, transformers' %v", p.Text, got, p.IDs)
		}
		prompts = append(prompts, p.IDs)
		lg, err := m.Logits(model.LeftPad([][]int{p.IDs}, 0, len(p.IDs)))
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.IDs {
			row := lg[i*V : (i+1)*V]
			for k, id := range p.TopIDs[i] {
				worst = math.Max(worst, math.Abs(float64(row[id])-p.TopLogits[i][k]))
			}
			best := 0
			for j := range row {
				if row[j] > row[best] {
					best = j
				}
			}
			positions++
			if best == p.TopIDs[i][0] {
				argmaxSame++
			}
		}
	}
	// Float32 on both sides with other summation orders: measured 1e-4
	// or so; the bound leaves room for other kernels (AVX2, portable).
	const tol = 2e-3
	t.Logf("transformers %s: largest |logit difference| over the top 16 of %d positions: %.2g; same argmax at %d/%d",
		ref.Versions["transformers"], positions, worst, argmaxSame, positions)
	if worst > tol {
		t.Errorf("logits differ from transformers' by up to %g, want at most %g", worst, tol)
	}
	if argmaxSame != positions {
		t.Errorf("argmax differs from transformers' at %d of %d positions", positions-argmaxSame, positions)
	}
	cs, err := m.Generate(context.Background(), prompts, model.GenerateConfig{MaxNewTokens: 32, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for i, c := range cs {
		if slices.Equal(c.Tokens, ref.Prompts[i].Greedy) {
			same++
		} else {
			t.Errorf("%q: greedy %v, transformers' %v", ref.Prompts[i].Text, c.Tokens, ref.Prompts[i].Greedy)
		}
	}
	t.Logf("greedy continuations of 32 tokens equal to transformers': %d/%d", same, len(cs))
}

// TestSmolLM2LlamaCpp runs the real file with llama.cpp itself: its
// tokenization of the 20 chat prompts, its greedy continuations (at
// least 32 tokens equal to grpokit's on every prompt) and its next-token
// probabilities (within a stated bound of grpokit's: llama.cpp rounds the
// activations to 8-bit blocks inside its Q4_1 and Q8_0 products).
func TestSmolLM2LlamaCpp(t *testing.T) {
	script := llamaCppScript(t)
	path := smollm2Path(t)
	m, tok := loadSmolLM2(t)
	ref := readTransformersRef(t)
	job := lcJob{Model: path}
	var prompts [][]int
	for _, p := range ref.Prompts {
		s, err := tok.ApplyChat([]tokenizer.Message{{Role: "user", Content: p.Text}}, tokenizer.ChatOptions{AddGenerationPrompt: true})
		if err != nil {
			t.Fatal(err)
		}
		job.Tokenize = append(job.Tokenize, s)
		ids := tok.Tokenizer.Encode(s, false)
		prompts = append(prompts, ids)
		job.Generate = append(job.Generate, genReq{Prompt: ids, N: 32})
	}
	job.Probs = prompts[:5]
	res := runLlamaCpp(t, script, []lcJob{job})[0]
	for i, ids := range res.Tokens {
		if !slices.Equal(ids, prompts[i]) {
			t.Errorf("%q: llama.cpp tokenizes the chat as %v, grpokit as %v", ref.Prompts[i].Text, ids, prompts[i])
		}
	}
	cs, err := m.Generate(context.Background(), prompts, model.GenerateConfig{MaxNewTokens: 32, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cs {
		n := 0
		for n < len(c.Tokens) && n < len(res.Generated[i]) && c.Tokens[n] == res.Generated[i][n] {
			n++
		}
		if n < 32 {
			t.Errorf("%q: grpokit and llama.cpp agree on %d greedy tokens, want 32:\n grpokit   %v\n llama.cpp %v",
				ref.Prompts[i].Text, n, c.Tokens, res.Generated[i])
		}
	}
	V := m.Config().VocabSize
	worst := 0.0
	for i, p := range job.Probs {
		lg, err := m.Logits(model.LeftPad([][]int{p}, 0, len(p)))
		if err != nil {
			t.Fatal(err)
		}
		for pos := range p {
			probs := softmax(lg[pos*V : (pos+1)*V])
			for _, e := range res.Probs[i][pos] {
				worst = math.Max(worst, math.Abs(probs[int(e[0])]-e[1]))
			}
		}
	}
	// Measured about 0.01 at the worst position of 5 prompts.
	const tol = 0.05
	t.Logf("largest |p - llama.cpp's p| over the top 32 ids of every position of 5 prompts: %.3g", worst)
	if worst > tol {
		t.Errorf("next-token probabilities differ from llama.cpp's by up to %g, want at most %g", worst, tol)
	}
}

// BenchmarkLoadSmolLM2 times LoadPretrained of the real file (the model in
// float32 and its tokenizer).
func BenchmarkLoadSmolLM2(b *testing.B) {
	path := smollm2Path(b)
	for b.Loop() {
		if _, _, err := LoadPretrained(path, nil); err != nil {
			b.Fatal(err)
		}
	}
}
