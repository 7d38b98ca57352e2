package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPickMinP keeps only tokens whose probability is at least MinP times
// the top token's (HF min_p): with probabilities ∝ 1, 0.5, 0.05, 0.3 and
// MinP 0.2, token 2 (0.05 < 0.2) is never drawn and the others are.
func TestPickMinP(t *testing.T) {
	logits := []float32{0, float32(math.Log(0.5)), float32(math.Log(0.05)), float32(math.Log(0.3))}
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, len(logits))
	for range 4000 {
		id, err := pick(logits, nil, GenerateConfig{Sampling: Sampling{Temperature: 1, MinP: 0.2}}, rng)
		if err != nil {
			t.Fatal(err)
		}
		counts[id]++
	}
	if counts[2] != 0 || counts[0] == 0 || counts[1] == 0 || counts[3] == 0 {
		t.Errorf("counts = %v, want token 2 never and the others drawn", counts)
	}
	// Kept tokens keep their relative odds: 1 : 0.5 : 0.3 over 1.8.
	if got := float64(counts[0]) / 4000; math.Abs(got-1/1.8) > 0.03 {
		t.Errorf("token 0 drawn %.3f of the time, want ≈ %.3f", got, 1/1.8)
	}
	// MinP 1 is greedy among the best.
	for range 20 {
		if id, _ := pick(logits, nil, GenerateConfig{Sampling: Sampling{Temperature: 1, MinP: 1}}, rng); id != 0 {
			t.Fatalf("MinP 1 drew %d, want 0", id)
		}
	}
}

// TestPenalizeRepeats checks HF's repetition penalty: seen tokens' positive
// logits are divided, negative ones multiplied, each token once.
func TestPenalizeRepeats(t *testing.T) {
	logits := []float32{2, -2, 1, 3}
	penalizeRepeats(logits, []int{0, 0}, []int{1, 0}, 2)
	want := []float32{1, -4, 1, 3}
	for i := range want {
		if logits[i] != want[i] {
			t.Errorf("logits = %v, want %v", logits, want)
			break
		}
	}
}

// TestGenerateRepetitionPenalty: greedy decoding of the tiny model with a
// huge repetition penalty never repeats a token of the prompt or of the
// completion so far.
func TestGenerateRepetitionPenalty(t *testing.T) {
	m := tinyModel(t)
	prompt := []int{1, 116, 275}
	out, err := m.Generate(t.Context(), [][]int{prompt}, GenerateConfig{MaxNewTokens: 12, Sampling: Sampling{RepetitionPenalty: 1e6}, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{1: true, 116: true, 275: true}
	for _, id := range out[0].Tokens {
		if seen[id] {
			t.Fatalf("completion %v repeats token %d", out[0].Tokens, id)
		}
		seen[id] = true
	}
	if _, err := m.Generate(t.Context(), [][]int{prompt}, GenerateConfig{MaxNewTokens: 2, Sampling: Sampling{MinP: 1.5}}); err == nil {
		t.Error("MinP 1.5 accepted")
	}
}

// BenchmarkPick samples one token from a SmolLM2-sized vocabulary (49,152)
// at temperature 1, as Generate does per row and step (with its scratch).
func BenchmarkPick(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 49152)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64())
	}
	var scratch chooseScratch
	for range b.N {
		if _, err := pickWith(&scratch, logits, nil, GenerateConfig{Sampling: Sampling{Temperature: 1}}, rng); err != nil {
			b.Fatal(err)
		}
	}
}
