package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/internal/backend"
)

// SampleWhere says where Generate chooses the next tokens.
type SampleWhere int

const (
	// SampleAuto samples in the graph on an XLA backend (a decode step
	// then brings back only the chosen ids instead of [rows, vocabulary]
	// logits) and on the host on the pure-Go backend, where the host
	// sampler is faster; a Constraint always samples on the host.
	SampleAuto SampleWhere = iota
	// SampleHost copies every step's logits to the host and samples there.
	SampleHost
	// SampleDevice samples in the graph on any backend. It cannot be
	// combined with a Constraint.
	SampleDevice
)

// String returns "auto", "host" or "device".
func (w SampleWhere) String() string {
	switch w {
	case SampleAuto:
		return "auto"
	case SampleHost:
		return "host"
	case SampleDevice:
		return "device"
	}
	return fmt.Sprintf("SampleWhere(%d)", int(w))
}

// onDevice reports whether Generate samples cfg's tokens in the graph.
func (m *Model) onDevice(cfg GenerateConfig) bool {
	switch {
	case cfg.Constraint != nil || cfg.onStep != nil || cfg.Sampler == SampleHost:
		return false
	case cfg.Sampler == SampleDevice:
		return true
	}
	return !backend.IsGo(m.backend)
}

// The in-graph sampler (sampleGraph) follows the host sampler (choose)
// stage by stage: stop ids banned below MinNewTokens, HF's repetition
// penalty (in float64, as on the host), then greedy argmax (ties to the
// lowest id) or, with a temperature, z = logits/T − max and the filters
// top-k, top-p and min-p before a Gumbel-max draw among the kept tokens.
// GoMLX has no sort or top-k op, so each filter's threshold on z is found
// by a search over thresholds (searchThreshold): top-k keeps the tokens at
// or above the largest threshold with at least k tokens at or above it,
// top-p those at or above the largest threshold whose kept tokens hold at
// least TopP of the probability. Tokens tied at a threshold (within the
// search's resolution, about 1e-8 in units of logit/T) are all kept, where
// the host keeps the lower ids first; otherwise the kept set is the host's.
//
// Randomness comes from a counter-based hash of (seed, step, row, token)
// computed with integer ops: a draw depends on these alone, and the noise
// is bit for bit the same on every backend.

// graphSampler holds the settings compiled into a sampling graph.
type graphSampler struct {
	greedy        bool
	topK          bool
	topP          bool
	minP          bool
	penalty       bool
	ban           bool // some stop ids are banned below MinNewTokens
	vocab, groups int  // groups: each input row is repeated this many times
}

// key returns the graph cache key of s.
func (s graphSampler) key() string {
	return fmt.Sprintf("sample/greedy=%v,k=%v,p=%v,minp=%v,rep=%v,ban=%v,G=%d", s.greedy, s.topK, s.topP, s.minP, s.penalty, s.ban, s.groups)
}

// searchArity and searchRounds set the threshold search: each round
// splits the interval into searchArity parts, so searchRounds rounds
// narrow [-zFloor, 1] to (zFloor+1)/searchArity^searchRounds ≈ 1e-8.
const (
	searchArity  = 16
	searchRounds = 9
	// zFloor bounds the search from below: exp(-104) is 0 in float32, so
	// a token further below the best one has no probability to lose.
	zFloor = 104
)

// searchThreshold returns, per row, the largest threshold t in
// [-zFloor, 1] (to the search's resolution) for which ok(t) holds, ok
// being monotone (true for small t, false for t > max z); t's shape is
// [N, m], ok's result [N, m] Bool. When ok(-zFloor) fails it returns
// -zFloor.
func searchThreshold(g *Graph, n int, ok func(t *Node) *Node) *Node {
	lo := BroadcastToDims(Scalar(g, dtypes.Float32, -zFloor), n, 1)
	hi := BroadcastToDims(Scalar(g, dtypes.Float32, 1), n, 1)
	m := searchArity - 1
	frac := DivScalar(ConvertDType(Iota(g, shapes.Make(dtypes.Int32, 1, m), 1), dtypes.Float32), searchArity)
	frac = AddScalar(frac, 1.0/searchArity) // j/A for j = 1…A−1
	inf := float32(math.Inf(1))
	for range searchRounds {
		t := Add(lo, Mul(Sub(hi, lo), frac)) // [N, m]
		good := ok(t)
		lo = Max(lo, ReduceAndKeep(Where(good, t, Scalar(g, dtypes.Float32, -inf)), ReduceMax, 1))
		hi = Min(hi, ReduceAndKeep(Where(good, Scalar(g, dtypes.Float32, inf), t), ReduceMin, 1))
	}
	return lo // [N, 1]
}

// sampleGraph chooses one token per row. logits is [R, V] (rows repeated
// s.groups times give the N = R·groups rows sampled); knobs is [4]
// float32 {1/T, TopP, MinP, TopK}; key is [2] uint32 (sampleKey);
// penalty a float64 scalar and seen [N, V] Bool the tokens already in
// each row's prompt and completion (with s.penalty, else nil); ban [N]
// Bool the rows whose stop ids (the [V] Bool isStop) are banned (with
// s.ban, else nil). It returns the ids [N] int32, their log-probabilities
// [N] float32 (log-softmax of the logits over T, 1 when greedy, after the
// penalty and the ban, before the filters) and, with s.penalty, seen with
// the chosen ids added.
func (s graphSampler) sampleGraph(logits, knobs, key, penalty, seen, ban, isStop *Node) []*Node {
	g := logits.Graph()
	V := s.vocab
	if s.groups > 1 {
		R := logits.Shape().Dimensions[0]
		logits = Reshape(BroadcastToDims(ExpandAxes(logits, 1), R, s.groups, V), R*s.groups, V)
	}
	N := logits.Shape().Dimensions[0]
	negInf := Scalar(g, dtypes.Float32, math.Inf(-1))
	l := logits
	if s.ban {
		l = Where(LogicalAnd(ExpandAxes(ban, 1), ExpandAxes(isStop, 0)), negInf, l)
	}
	if s.penalty {
		// As penalizeRepeats: in float64, then rounded to float32.
		l64 := ConvertDType(l, dtypes.Float64)
		pen := Where(LessThan(l64, ScalarZero(g, dtypes.Float64)), Mul(l64, penalty), Div(l64, penalty))
		l = Where(seen, ConvertDType(pen, dtypes.Float32), l)
	}
	var ids, z *Node
	if s.greedy {
		ids = ArgMax(l, 1, dtypes.Int32)
		z = Sub(l, ReduceAndKeep(l, ReduceMax, 1))
	} else {
		invT := elem(knobs, 0)
		z = Mul(l, invT)
		z = Sub(z, ReduceAndKeep(z, ReduceMax, 1)) // ≤ 0, the best token at 0
		w := Exp(z)
		keep := GreaterThan(z, negInf)
		if s.topK {
			k := elem(knobs, 3)
			z3 := ExpandAxes(z, -1) // [N, V, 1]
			tau := searchThreshold(g, N, func(t *Node) *Node {
				count := ReduceSum(ConvertDType(GreaterOrEqual(z3, ExpandAxes(t, 1)), dtypes.Float32), 1)
				return GreaterOrEqual(count, k)
			})
			keep = LogicalAnd(keep, GreaterOrEqual(z, tau))
		}
		if s.topP {
			p := elem(knobs, 1)
			wk := Where(keep, w, ZerosLike(w))
			need := Mul(ReduceAndKeep(wk, ReduceSum, 1), p) // [N, 1]
			z3, w3 := ExpandAxes(z, -1), ExpandAxes(wk, -1)
			tau := searchThreshold(g, N, func(t *Node) *Node {
				mass := ReduceSum(Mul(ConvertDType(GreaterOrEqual(z3, ExpandAxes(t, 1)), dtypes.Float32), w3), 1)
				return GreaterOrEqual(mass, need)
			})
			keep = LogicalAnd(keep, GreaterOrEqual(z, tau))
		}
		if s.minP {
			keep = LogicalAnd(keep, GreaterOrEqual(w, elem(knobs, 2)))
		}
		score := Where(keep, Add(z, gumbel(g, key, N, V)), negInf)
		ids = ArgMax(score, 1, dtypes.Int32)
	}
	chosen := Equal(Iota(g, shapes.Make(dtypes.Int32, N, V), 1), ExpandAxes(ids, 1))
	lse := Log(ReduceSum(Exp(z), 1))
	lp := Sub(ReduceSum(Where(chosen, z, ZerosLike(z)), 1), lse)
	out := []*Node{ids, lp}
	if s.penalty {
		out = append(out, LogicalOr(seen, chosen))
	}
	return out
}

// elem returns element i of the vector x as a scalar.
func elem(x *Node, i int) *Node { return Reshape(Slice(x, AxisElem(i))) }

// gumbel returns [N, V] float32 Gumbel(0, 1) noise: -log(-log(u)) with u
// uniform in (0, 1) from hashUniform.
func gumbel(g *Graph, key *Node, N, V int) *Node {
	return Neg(Log(Neg(Log(hashUniform(g, key, N, V)))))
}

// hashUniform returns [N, V] float32 uniforms in (0, 1): for element
// c = row·V + token, u = (top 24 bits of hash32(c, key) + 1/2) / 2^24
// (see hashU32 for the host twin).
func hashUniform(g *Graph, key *Node, N, V int) *Node {
	c := ConvertDType(Iota(g, shapes.Make(dtypes.Int32, N*V), 0), dtypes.Uint32)
	k1, k2 := elem(key, 0), elem(key, 1)
	h := fmix32Graph(Add(fmix32Graph(BitwiseXor(Mul(c, Scalar(g, dtypes.Uint32, golden32)), k1)), k2))
	u := ConvertDType(Div(h, Scalar(g, dtypes.Uint32, 256)), dtypes.Float32)
	u = MulScalar(AddScalar(u, 0.5), 1.0/(1<<24))
	return Reshape(u, N, V)
}

// golden32 is 2^32 divided by the golden ratio, odd: a multiplier that
// spreads consecutive counters.
const golden32 = 0x9e3779b1

// fmix32Graph is MurmurHash3's 32-bit finalizer (fmix32) on uint32 nodes;
// shifts are divisions by powers of two (the pure-Go backend has no shift
// ops), multiplications wrap.
func fmix32Graph(x *Node) *Node {
	g := x.Graph()
	u := func(v uint32) *Node { return Scalar(g, dtypes.Uint32, v) }
	x = BitwiseXor(x, Div(x, u(1<<16)))
	x = Mul(x, u(0x85ebca6b))
	x = BitwiseXor(x, Div(x, u(1<<13)))
	x = Mul(x, u(0xc2b2ae35))
	return BitwiseXor(x, Div(x, u(1<<16)))
}

// fmix32 is MurmurHash3's 32-bit finalizer.
func fmix32(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x85ebca6b
	x ^= x >> 13
	x *= 0xc2b2ae35
	return x ^ x>>16
}

// hashU32 is hashUniform's hash of element c on the host.
func hashU32(c uint32, key [2]uint32) uint32 {
	return fmix32(fmix32(c*golden32^key[0]) + key[1])
}

// sampleKey derives the two hash keys of one decode step from the seed.
func sampleKey(seed uint64, step int) [2]uint32 {
	a := fmix32(uint32(seed) ^ fmix32(uint32(seed>>32)^0x5eed5eed))
	b := fmix32(a ^ fmix32(uint32(step)+golden32))
	return [2]uint32{b, fmix32(b ^ 0x2545f491)}
}

// deviceSampler runs sampleGraph for Generate: it keeps the settings'
// tensors, each row's seen tokens (on the device, with a repetition
// penalty) and the per-step key.
type deviceSampler struct {
	m      *Model
	cfg    GenerateConfig
	stops  []int
	s      graphSampler
	knobs  *tensors.Tensor
	pen    *tensors.Tensor
	isStop *tensors.Tensor
	seen   *tensors.Tensor // [N, V] Bool, with a penalty
	ban    []bool
	steps  int // steps sampled so far (the hash counter)
	lp     []float32
}

// newDeviceSampler prepares the in-graph sampling of N = len(prompts)·g
// rows.
func (m *Model) newDeviceSampler(cfg GenerateConfig, stops []int, prompts [][]int, g, N int) *deviceSampler {
	V := m.cfg.VocabSize
	d := &deviceSampler{m: m, cfg: cfg, stops: stops}
	d.s = graphSampler{
		greedy:  cfg.Temperature == 0,
		penalty: cfg.RepetitionPenalty != 0 && cfg.RepetitionPenalty != 1,
		vocab:   V,
	}
	if !d.s.greedy {
		d.s.topK = cfg.TopK > 0 && cfg.TopK < V
		d.s.topP = cfg.TopP > 0 && cfg.TopP < 1
		d.s.minP = cfg.MinP > 0
	}
	isStop := make([]bool, V)
	for _, id := range stops {
		if id >= 0 && id < V {
			isStop[id] = true
			d.s.ban = cfg.MinNewTokens > 0
		}
	}
	d.isStop = tensors.FromValue(isStop)
	if d.s.ban {
		d.ban = make([]bool, N)
	}
	invT := 1.0
	if cfg.Temperature > 0 {
		invT = 1 / cfg.Temperature
	}
	d.knobs = tensors.FromValue([]float32{float32(invT), float32(cfg.TopP), float32(cfg.MinP), float32(cfg.TopK)})
	d.pen = tensors.FromScalar(cfg.RepetitionPenalty)
	if d.s.penalty {
		seen := make([]bool, N*V)
		for i := range N {
			for _, id := range prompts[i/g] {
				seen[i*V+id] = true
			}
		}
		d.seen = tensors.FromFlatDataAndDimensions(seen, N, V)
	}
	return d
}

// finalize frees the device state.
func (d *deviceSampler) finalize() {
	if d.seen != nil {
		d.seen.FinalizeAll()
		d.seen = nil
	}
}

// step samples the next token of every row from logits ([N/groups, V],
// left on the device) and appends it to the unfinished completions of
// out, as sampler.step does; groups > 1 repeats each logits row (the
// prefill's one row per prompt).
func (d *deviceSampler) step(logits *tensors.Tensor, groups int, out []Completion, next []int32) (done bool, err error) {
	s := d.s
	s.groups = groups
	e, err := d.m.exec(s.key(), func(ctx *mlctx.Context, in []*Node) []*Node {
		var pen, seen, ban, isStop *Node
		rest := in[3:]
		if s.penalty {
			pen, seen, rest = in[3], in[4], in[5:]
		}
		if s.ban {
			ban, isStop = rest[0], rest[1]
		}
		return s.sampleGraph(in[0], in[1], in[2], pen, seen, ban, isStop)
	})
	if err != nil {
		return false, err
	}
	k := sampleKey(d.cfg.Seed, d.steps)
	d.steps++
	args := []any{logits, d.knobs, tensors.FromValue(k[:])}
	if s.penalty {
		seen, err := DonateTensorBuffer(d.seen, d.m.backend, 0)
		if err != nil {
			return false, err
		}
		args = append(args, d.pen, seen)
	}
	if s.ban {
		for i := range out {
			d.ban[i] = len(out[i].Tokens) < d.cfg.MinNewTokens
		}
		args = append(args, tensors.FromValue(slices.Clone(d.ban)), d.isStop)
	}
	res, err := e.Exec(args...)
	if err != nil {
		return false, fmt.Errorf("model: generate: sampling: %w", err)
	}
	if s.penalty {
		d.seen = res[2]
	}
	ids, err := tensors.CopyFlatData[int32](res[0])
	if err != nil {
		return false, err
	}
	if d.lp, err = tensors.CopyFlatData[float32](res[1]); err != nil {
		return false, err
	}
	res[0].FinalizeAll()
	res[1].FinalizeAll()
	done = true
	for i := range out {
		if out[i].Stopped {
			next[i] = int32(d.cfg.PadID)
			continue
		}
		tok := int(ids[i])
		out[i].Tokens = append(out[i].Tokens, tok)
		if d.cfg.LogProbs {
			out[i].LogProbs = append(out[i].LogProbs, d.lp[i])
		}
		out[i].Stopped = slices.Contains(d.stops, tok)
		next[i] = ids[i]
		done = done && out[i].Stopped
	}
	return done, nil
}
