package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/grpokit/grpokit/internal/backend"
)

// TestHashUniformMatchesHost: the graph's counter-based hash (integer
// ops, shifts written as divisions) gives exactly the host's fmix32-based
// hash for every element, so draws do not depend on the backend.
func TestHashUniformMatchesHost(t *testing.T) {
	const N, V = 3, 1000
	key := sampleKey(42, 7)
	out := MustExecOnce(backend.Must(""), func(k *Node) *Node { return hashUniform(k.Graph(), k, N, V) }, key[:])
	got := tensors.MustCopyFlatData[float32](out)
	for c := range N * V {
		want := (float32(hashU32(uint32(c), key)>>8) + 0.5) / (1 << 24)
		if got[c] != want {
			t.Fatalf("u[%d] = %v, want %v", c, got[c], want)
		}
	}
	if k2 := sampleKey(42, 8); k2 == key {
		t.Errorf("steps 7 and 8 share the key %v", key)
	}
}

// hostDistribution returns the probability of every token under the host
// sampler (choose) for one row: choose is an inverse CDF of u, so its
// outcomes over a fine grid of u give the distribution to 1/steps.
func hostDistribution(logits []float32, cfg GenerateConfig, steps int) []float64 {
	p := make([]float64, len(logits))
	var sc chooseScratch
	row := make([]float32, len(logits))
	for i := range steps {
		copy(row, logits)
		p[choose(&sc, row, nil, cfg, (float64(i)+0.5)/float64(steps))] += 1 / float64(steps)
	}
	return p
}

// chiSquareCritical is the chi-square quantile for df degrees of freedom
// at upper-tail probability 0.001 (Wilson–Hilferty; z = 3.0902).
func chiSquareCritical(df int) float64 {
	d := float64(df)
	c := 1 - 2/(9*d) + 3.0902*math.Sqrt(2/(9*d))
	return d * c * c * c
}

// chiSquare compares counts drawn with the probabilities p: bins with an
// expected count under 5 are pooled. It returns the statistic, the degrees
// of freedom and an error for a draw the probabilities rule out.
func chiSquare(counts []int, p []float64) (stat float64, df int, err error) {
	n := 0
	for _, c := range counts {
		n += c
	}
	var poolE, poolO float64
	bins := 0
	for i, c := range counts {
		e := p[i] * float64(n)
		if p[i] == 0 {
			if c > 0 {
				return 0, 0, fmt.Errorf("token %d drawn %d times, probability 0 on the host", i, c)
			}
			continue
		}
		if e < 5 {
			poolE += e
			poolO += float64(c)
			continue
		}
		stat += (float64(c) - e) * (float64(c) - e) / e
		bins++
	}
	if poolE > 0 {
		stat += (poolO - poolE) * (poolO - poolE) / max(poolE, 1e-9)
		bins++
	}
	return stat, bins - 1, nil
}

// drawGraph samples rows copies of logits with the in-graph sampler at
// step and returns the ids.
func drawGraph(t *testing.T, logits []float32, rows int, cfg GenerateConfig, seen []int, step int) []int32 {
	t.Helper()
	V := len(logits)
	d := &deviceSampler{}
	d.s = graphSampler{greedy: cfg.Temperature == 0, penalty: cfg.RepetitionPenalty != 0 && cfg.RepetitionPenalty != 1, vocab: V, groups: rows}
	if !d.s.greedy {
		d.s.topK = cfg.TopK > 0 && cfg.TopK < V
		d.s.topP = cfg.TopP > 0 && cfg.TopP < 1
		d.s.minP = cfg.MinP > 0
	}
	invT := 1.0
	if cfg.Temperature > 0 {
		invT = 1 / cfg.Temperature
	}
	key := sampleKey(cfg.Seed, step)
	in := []any{
		tensors.FromFlatDataAndDimensions(slices.Clone(logits), 1, V),
		[]float32{float32(invT), float32(cfg.TopP), float32(cfg.MinP), float32(cfg.TopK)},
		key[:],
	}
	if d.s.penalty {
		s := make([]bool, rows*V)
		for r := range rows {
			for _, id := range seen {
				s[r*V+id] = true
			}
		}
		in = append(in, cfg.RepetitionPenalty, tensors.FromFlatDataAndDimensions(s, rows, V))
	}
	out := MustExecOnceN(backend.Must(""), func(in []*Node) []*Node {
		var pen, seen *Node
		if d.s.penalty {
			pen, seen = in[3], in[4]
		}
		return d.s.sampleGraph(in[0], in[1], in[2], pen, seen, nil, nil)
	}, in...)
	return tensors.MustCopyFlatData[int32](out[0])
}

// TestGraphSamplerMatchesHostDistribution draws many tokens per setting
// with the in-graph sampler and compares their frequencies with the host
// sampler's distribution by a chi-square test at p = 0.001 (fixed seeds:
// the outcome is deterministic). Tokens the host never picks must never
// be drawn.
func TestGraphSamplerMatchesHostDistribution(t *testing.T) {
	const V, rows = 40, 8000
	r := rand.New(rand.NewPCG(3, 4))
	logits := make([]float32, V)
	for i := range logits {
		logits[i] = float32(2 * r.NormFloat64())
	}
	seen := []int{1, 5, 9, 17, 33}
	for _, tc := range []struct {
		name string
		cfg  GenerateConfig
	}{
		{"T=1", GenerateConfig{Sampling: Sampling{Temperature: 1}}},
		{"T=0.6", GenerateConfig{Sampling: Sampling{Temperature: 0.6}}},
		{"top-k 6", GenerateConfig{Sampling: Sampling{Temperature: 1, TopK: 6}}},
		{"top-k 1", GenerateConfig{Sampling: Sampling{Temperature: 1.5, TopK: 1}}},
		{"top-p 0.8", GenerateConfig{Sampling: Sampling{Temperature: 1, TopP: 0.8}}},
		{"top-p 0.3 T=2", GenerateConfig{Sampling: Sampling{Temperature: 2, TopP: 0.3}}},
		{"min-p 0.05", GenerateConfig{Sampling: Sampling{Temperature: 1.2, MinP: 0.05}}},
		{"top-k 10 top-p 0.9 min-p 0.02", GenerateConfig{Sampling: Sampling{Temperature: 0.9, TopK: 10, TopP: 0.9, MinP: 0.02}}},
		{"repetition penalty 1.5", GenerateConfig{Sampling: Sampling{Temperature: 1, RepetitionPenalty: 1.5}}},
		{"penalty 1.3 top-p 0.7", GenerateConfig{Sampling: Sampling{Temperature: 1, RepetitionPenalty: 1.3, TopP: 0.7}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Seed = 11
			host := slices.Clone(logits)
			if tc.cfg.RepetitionPenalty != 0 {
				penalizeRepeats(host, seen, nil, tc.cfg.RepetitionPenalty)
			}
			p := hostDistribution(host, tc.cfg, 200_000)
			counts := make([]int, V)
			for step := range 2 {
				for _, id := range drawGraph(t, logits, rows/2, tc.cfg, seen, step) {
					counts[id]++
				}
			}
			stat, df, err := chiSquare(counts, p)
			if err != nil {
				t.Fatal(err)
			}
			crit := chiSquareCritical(max(df, 1))
			t.Logf("chi-square %.1f, df %d, critical (p = 0.001) %.1f", stat, df, crit)
			if stat > crit {
				t.Errorf("in-graph draws differ from the host distribution: chi-square %.1f > %.1f (df %d)\ncounts %v\nhost p %v", stat, crit, df, counts, p)
			}
		})
	}
}

// TestGenerateOnDeviceGreedy: greedy generation with the in-graph sampler
// gives transformers' greedy ids on every golden model, and the host's
// tokens and log-probabilities with a repetition penalty, a minimum
// length and groups.
func TestGenerateOnDeviceGreedy(t *testing.T) {
	for _, name := range goldenCases {
		t.Run(name, func(t *testing.T) {
			g := loadGolden(t, name)
			m, err := Load(g.dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			prompts := goldenPrompts(g)
			out, err := m.Generate(t.Context(), prompts, GenerateConfig{MaxNewTokens: g.JSON.Generate.MaxNewTokens, IgnoreEOS: true, NumGenerations: 2, Sampler: SampleDevice})
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range out {
				if want := g.JSON.Generate.NewTokens[i/2]; !slices.Equal(c.Tokens, want) {
					t.Errorf("row %d: got %v, want %v", i, c.Tokens, want)
				}
			}
		})
	}
	m := tinyModel(t)
	prompts := [][]int{{1, 116, 275, 30}, {1, 7}, {1, 300, 301}, {1, 9, 9, 9, 9}}
	// A seventh of the vocabulary stops a row: rows end at different steps.
	var stops []int
	for i := 0; i < 512; i += 7 {
		stops = append(stops, i)
	}
	for _, cfg := range []GenerateConfig{
		{MaxNewTokens: 10, NumGenerations: 3, Sampling: Sampling{RepetitionPenalty: 1.3}, LogProbs: true},
		{MaxNewTokens: 10, MinNewTokens: 6, StopIDs: []int{65, 218, 2}, LogProbs: true},
		{MaxNewTokens: 16, NumGenerations: 4, StopIDs: stops, Sampling: Sampling{RepetitionPenalty: 1.1}},
	} {
		host, dev := cfg, cfg
		host.Sampler, dev.Sampler = SampleHost, SampleDevice
		want, err := m.Generate(t.Context(), prompts, host)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Generate(t.Context(), prompts, dev)
		if err != nil {
			t.Fatal(err)
		}
		lengths := map[int]bool{}
		for i := range want {
			lengths[len(want[i].Tokens)] = true
			if !slices.Equal(got[i].Tokens, want[i].Tokens) || got[i].Stopped != want[i].Stopped {
				t.Errorf("%+v row %d: device %v (stopped %v), host %v (stopped %v)", cfg, i, got[i].Tokens, got[i].Stopped, want[i].Tokens, want[i].Stopped)
				continue
			}
			for j := range want[i].LogProbs {
				if d := math.Abs(float64(got[i].LogProbs[j] - want[i].LogProbs[j])); d > 1e-4 {
					t.Errorf("row %d token %d: log-prob %v on the device, %v on the host", i, j, got[i].LogProbs[j], want[i].LogProbs[j])
				}
			}
		}
		if len(cfg.StopIDs) > 50 && len(lengths) < 3 {
			t.Errorf("rows stopped after only %d distinct lengths: the case should end rows at different steps", len(lengths))
		}
	}
}

// TestGenerateOnDeviceSampling: in-graph sampling through Generate is
// seeded (equal seeds, equal outputs; another seed, other outputs), keeps
// to top-k, and keeps stop ids out until MinNewTokens.
func TestGenerateOnDeviceSampling(t *testing.T) {
	m := tinyModel(t)
	prompts := [][]int{{1, 116, 275}, {1, 40, 41, 42}}
	cfg := GenerateConfig{Sampling: Sampling{Temperature: 1, TopK: 3, TopP: 0.95}, MaxNewTokens: 12, MinNewTokens: 12, NumGenerations: 4, Seed: 5, StopIDs: []int{3, 4}, Sampler: SampleDevice, LogProbs: true}
	a, err := m.Generate(t.Context(), prompts, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Generate(t.Context(), prompts, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Seed = 6
	c, err := m.Generate(t.Context(), prompts, cfg)
	if err != nil {
		t.Fatal(err)
	}
	same := true
	for i := range a {
		if !slices.Equal(a[i].Tokens, b[i].Tokens) {
			t.Errorf("row %d: seed 5 gave %v, then %v", i, a[i].Tokens, b[i].Tokens)
		}
		same = same && slices.Equal(a[i].Tokens, c[i].Tokens)
		if len(a[i].Tokens) != 12 || len(a[i].LogProbs) != 12 {
			t.Errorf("row %d: %d tokens, %d log-probs, want 12", i, len(a[i].Tokens), len(a[i].LogProbs))
		}
		for _, id := range a[i].Tokens {
			if id == 3 || id == 4 || id == 2 {
				t.Errorf("row %d drew stop id %d before MinNewTokens", i, id)
			}
		}
		for _, lp := range a[i].LogProbs {
			if !(lp <= 0) {
				t.Errorf("row %d: log-prob %v", i, lp)
			}
		}
	}
	if same {
		t.Error("seeds 5 and 6 gave the same completions")
	}
	cfg.Constraint = ConstraintFunc(func([]int) []int { return []int{5} })
	if _, err := m.Generate(t.Context(), prompts, cfg); err == nil || !strings.Contains(err.Error(), "Constraint") {
		t.Errorf("Constraint with SampleDevice: error %v", err)
	}
}

// TestGraphSamplerDTypes: the sampler's outputs have the documented shapes
// and dtypes.
func TestGraphSamplerDTypes(t *testing.T) {
	s := graphSampler{vocab: 8, groups: 2, topK: true}
	out := MustExecOnceN(backend.Must(""), func(l, k, key *Node) []*Node { return s.sampleGraph(l, k, key, nil, nil, nil, nil) },
		tensors.FromFlatDataAndDimensions(make([]float32, 3*8), 3, 8), []float32{1, 0, 0, 2}, []uint32{1, 2})
	if out[0].DType() != dtypes.Int32 || out[0].Shape().Dimensions[0] != 6 || out[1].DType() != dtypes.Float32 {
		t.Errorf("outputs %s, %s", out[0].Shape(), out[1].Shape())
	}
}

// TestSampleWhere: SampleAuto samples on the host on the pure-Go backend
// (where the host sampler is the faster) and with a Constraint; an
// unknown Sampler is an error.
func TestSampleWhere(t *testing.T) {
	m := tinyModel(t)
	c := ConstraintFunc(func([]int) []int { return nil })
	for _, tc := range []struct {
		cfg  GenerateConfig
		want bool
	}{
		{GenerateConfig{}, false},
		{GenerateConfig{Sampler: SampleHost}, false},
		{GenerateConfig{Sampler: SampleDevice}, true},
		{GenerateConfig{Constraint: c}, false},
	} {
		if got := m.onDevice(tc.cfg); got != tc.want {
			t.Errorf("Sampler %v, constraint %v: on the device %v, want %v", tc.cfg.Sampler, tc.cfg.Constraint != nil, got, tc.want)
		}
	}
	_, err := m.Generate(t.Context(), [][]int{{1}}, GenerateConfig{MaxNewTokens: 1, Sampler: 7})
	if err == nil || !strings.Contains(err.Error(), "unknown Sampler") {
		t.Errorf("Sampler 7: error %v", err)
	}
}
