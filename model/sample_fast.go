package model

import (
	"math"

	"github.com/grpokit/grpokit/internal/exp64"
)

// chooseScratch is one sampling worker's reusable memory: a fresh
// vocabulary-sized slice per token cost more (page faults, clearing) than
// the sampling itself.
type chooseScratch struct {
	cs []cand
	p  []float64 // the fast path's weights
}

// fastChoose turns chooseFast on; tests turn it off to compare.
var fastChoose = true

// chooseFast is choose over the whole vocabulary without top-k (every
// GRPO rollout's case), bit for bit the same token: the maximum is taken
// over the float32 logits (dividing by T > 0 keeps the order, so it is the
// same maximum), the weights exp(logit/T − max) come from exp64, which
// returns math.Exp's float64s exactly, and they are summed and walked in
// the same order. It returns ok = false when it does not apply (a
// constraint, top-k, a non-finite maximum or NaN logits); with top-p or
// min-p it returns the candidates and their sum for chooseFiltered, else
// the token.
func chooseFast(sc *chooseScratch, logits []float32, allowed []int, cfg GenerateConfig, u01 float64) (cs []cand, sum float64, tok int, ok bool) {
	n := len(logits)
	if !fastChoose || allowed != nil || n == 0 || !(cfg.Temperature > 0) || (cfg.TopK > 0 && cfg.TopK < n) {
		return nil, 0, 0, false
	}
	mx32 := maxOf(logits)
	if math.IsNaN(float64(mx32)) || math.IsInf(float64(mx32), 0) {
		return nil, 0, 0, false
	}
	if cap(sc.p) < n {
		sc.p = make([]float64, n)
	}
	p := sc.p[:n]
	exp64.Shifted(p, logits, cfg.Temperature, float64(mx32)/cfg.Temperature)
	for _, v := range p {
		sum += v
	}
	if (cfg.TopP > 0 && cfg.TopP < 1) || cfg.MinP > 0 {
		if cap(sc.cs) < n {
			sc.cs = make([]cand, n)
		}
		cs = sc.cs[:n]
		for i, v := range p {
			cs[i] = cand{i, v}
		}
		return cs, sum, 0, true
	}
	u := u01 * sum
	for i, v := range p {
		u -= v
		if u <= 0 {
			return nil, sum, i, true
		}
	}
	return nil, sum, n - 1, true
}

// maxOf returns the largest of xs (NaN if any is NaN), four running
// maxima at a time.
func maxOf(xs []float32) float32 {
	m0 := float32(math.Inf(-1))
	m1, m2, m3 := m0, m0, m0
	i := 0
	for ; i+4 <= len(xs); i += 4 {
		m0, m1, m2, m3 = max(m0, xs[i]), max(m1, xs[i+1]), max(m2, xs[i+2]), max(m3, xs[i+3])
	}
	for ; i < len(xs); i++ {
		m0 = max(m0, xs[i])
	}
	return max(max(m0, m1), max(m2, m3))
}
