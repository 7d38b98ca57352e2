package model

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"

	"github.com/grpokit/grpokit/internal/fork"
)

// sampler chooses every row's next token for Generate. Rows are chosen in
// parallel (a SmolLM2-sized vocabulary costs about 0.3 ms per row and
// token), while the constraint is asked and the random numbers are drawn
// in row order, one per unfinished row, exactly as a row-by-row loop does:
// the tokens do not depend on the number of workers.
type sampler struct {
	cfg     GenerateConfig
	stops   []int
	prompts [][]int // row i continues prompts[i/g]
	g       int
	rng     *rand.Rand
	scratch []chooseScratch // one per worker
	allowed [][]int
	u       []float64
	toks    []int
	lps     []float32 // with cfg.LogProbs
}

func newSampler(cfg GenerateConfig, stops []int, prompts [][]int, g, rows int) *sampler {
	return &sampler{
		cfg: cfg, stops: stops, prompts: prompts, g: g,
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		allowed: make([][]int, rows),
		u:       make([]float64, rows),
		toks:    make([]int, rows),
		lps:     make([]float32, rows),
	}
}

// parallelMinLogits is the fewest logits (rows × vocabulary) sampled on
// several goroutines; below it a goroutine costs more than it saves. A
// variable so that tests can move it.
var parallelMinLogits = 1 << 16

// step appends the next token to every unfinished completion of out,
// chosen from logits [len(out)·V] (which it modifies: stop ids banned,
// repetition penalty), and sets next to the tokens to feed (PadID for
// finished rows). It reports whether every completion has stopped.
func (s *sampler) step(logits []float32, out []Completion, next []int32) (done bool, err error) {
	cfg := s.cfg
	n := len(out)
	V := len(logits) / n
	for i := range n {
		if out[i].Stopped {
			continue
		}
		if s.allowed[i], err = allowedNext(cfg.Constraint, out[i].Tokens, V); err != nil {
			return false, err
		}
		if cfg.Temperature != 0 {
			s.u[i] = s.rng.Float64()
		}
	}
	one := func(w, lo, hi int) {
		for i := lo; i < hi; i++ {
			if out[i].Stopped {
				continue
			}
			row := logits[i*V : (i+1)*V]
			if len(out[i].Tokens) < cfg.MinNewTokens {
				banStops(row, s.stops)
			}
			if cfg.RepetitionPenalty != 0 && cfg.RepetitionPenalty != 1 {
				penalizeRepeats(row, s.prompts[i/s.g], out[i].Tokens, cfg.RepetitionPenalty)
			}
			s.toks[i] = choose(&s.scratch[w], row, s.allowed[i], cfg, s.u[i])
			if cfg.LogProbs {
				s.lps[i] = rowLogProb(row, s.toks[i], cfg.Temperature)
			}
		}
	}
	workers := 1
	if len(logits) >= parallelMinLogits {
		workers = min(runtime.GOMAXPROCS(0), n)
	}
	if len(s.scratch) < workers {
		s.scratch = append(s.scratch, make([]chooseScratch, workers-len(s.scratch))...)
	}
	if workers == 1 {
		one(0, 0, n)
	} else {
		fork.Run(workers, func(w int) { one(w, w*n/workers, (w+1)*n/workers) })
	}
	done = true
	for i := range n {
		if out[i].Stopped {
			next[i] = int32(cfg.PadID)
			continue
		}
		tok := s.toks[i]
		out[i].Tokens = append(out[i].Tokens, tok)
		if cfg.LogProbs {
			out[i].LogProbs = append(out[i].LogProbs, s.lps[i])
		}
		out[i].Stopped = slices.Contains(s.stops, tok)
		next[i] = int32(tok)
		done = done && out[i].Stopped
	}
	return done, nil
}

// rowLogProb returns log-softmax(row / T)[tok] (T = 1 when 0, greedy), in
// float64: Completion.LogProbs on the host.
func rowLogProb(row []float32, tok int, temperature float64) float32 {
	invT := 1.0
	if temperature > 0 {
		invT = 1 / temperature
	}
	mx := float64(maxOf(row)) * invT
	sum := 0.0
	for _, l := range row {
		sum += math.Exp(float64(l)*invT - mx)
	}
	return float32(float64(row[tok])*invT - mx - math.Log(sum))
}
