package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/grpokit/grpokit/internal/pad"
)

// Sampling holds the settings that pick each next token, shared by
// GenerateConfig, the trainer's config (TRL's flat key names, as in its
// JSON tags) and the generation and evaluation options built on them. The
// zero value decodes greedily with nothing filtered.
type Sampling struct {
	// Temperature divides the logits before sampling; 0 means greedy.
	// The trainer also divides by it when it computes log-probs.
	Temperature float64 `json:"temperature"`
	// TopP keeps the smallest set of tokens whose probability reaches P
	// (nucleus sampling); 0 or 1 means all.
	TopP float64 `json:"top_p"`
	// TopK keeps the K most likely tokens when sampling; 0 means all.
	TopK int `json:"top_k"`
	// MinP keeps the tokens whose probability is at least MinP times the
	// most likely token's (HF min_p, applied after TopK and TopP); 0 means
	// all. In [0, 1]; typical values 0.01–0.2.
	MinP float64 `json:"min_p"`
	// RepetitionPenalty divides the positive logits and multiplies the
	// negative ones of every token already in the prompt or the completion
	// (HF repetition_penalty, applied before Temperature, greedy included):
	// above 1 discourages repeats, below 1 encourages them; 0 or 1 means
	// none. Must be ≥ 0.
	RepetitionPenalty float64 `json:"repetition_penalty"`
}

// GenerateConfig controls Generate. The zero value is invalid only because
// MaxNewTokens must be set; everything else defaults sensibly.
type GenerateConfig struct {
	// MaxNewTokens bounds each completion's length; required, > 0.
	MaxNewTokens int
	// NumGenerations is the number of completions per prompt (GRPO's G);
	// 0 means 1. Each prompt is prefilled once and its KV cache shared.
	NumGenerations int
	// Sampling picks each next token: temperature, top-k, top-p, min-p and
	// the repetition penalty. The zero value decodes greedily.
	Sampling
	// Seed seeds the sampler: equal seeds and inputs give equal outputs.
	Seed uint64
	// StopIDs end a completion (the stop id is kept as its last token). The
	// config's eos_token_id(s) stop too, unless IgnoreEOS.
	StopIDs   []int
	IgnoreEOS bool
	// MinNewTokens keeps every stop id (StopIDs and, unless IgnoreEOS, the
	// EOS ids) from being chosen before a completion has this many tokens,
	// as HF generate's min_new_tokens; MinNewTokens = MaxNewTokens forces
	// exactly MaxNewTokens tokens. 0 means no minimum; at most MaxNewTokens.
	MinNewTokens int
	// PadID fills the left padding of prompts. Default 0.
	PadID int
	// Constraint, if set, restricts every next token (constrained decoding).
	// It is applied on the host (see Sampler).
	Constraint Constraint
	// KeepFinishedRows keeps every row in the decode batch until the last
	// one stops. By default, on the go backend in float32, rows that have
	// stopped leave the batch: once a batch of at most three quarters the
	// size can hold the rows still running, their KV caches are gathered
	// into it, so that a step costs about what the live rows cost. The
	// tokens are the same either way (only a batch whose products sum
	// every row in the same order is chosen), so this is for measuring
	// what dropping them saves.
	KeepFinishedRows bool
	// Sampler says where the tokens are chosen: SampleAuto (the default)
	// samples in the graph on an XLA backend and on the host on the
	// pure-Go backend or with a Constraint. Both follow the same stages
	// and draw from the same distribution, but not the same random
	// numbers: equal seeds give equal outputs on one side only. Greedy
	// decoding picks the same tokens on both.
	Sampler SampleWhere
	// LogProbs asks for each token's log-probability (Completion.LogProbs).
	LogProbs bool

	// onStep, for tests, sees the raw logits [N*V] that chose each step's tokens.
	onStep func(step int, logits []float32)
	// onCaches, for tests, sees the KV caches after prefill (step 0) and
	// after each decode step.
	onCaches func(step int, caches []*tensors.Tensor)
	// onCompact, for tests, sees each smaller batch before the decode step
	// of the given step runs on it (compact.go).
	onCompact func(step int, l batchLayout)
}

// Completion is one generated sequence.
type Completion struct {
	// Tokens are the generated ids, including the stop id that ended it.
	Tokens []int
	// Stopped reports whether a stop id ended it (else MaxNewTokens did).
	Stopped bool
	// LogProbs, with GenerateConfig.LogProbs, holds each token's
	// log-probability: the log-softmax of the logits divided by the
	// temperature (1 when greedy), after the repetition penalty and the
	// stop-id ban, before top-k, top-p and min-p.
	LogProbs []float32
}

// bucket rounds a length up to one of a few sizes, so that graph.Exec
// compiles few shapes: powers of two from 16 to 256, then multiples of 256.
func bucket(n int) int {
	if n > 256 {
		return (n + 255) / 256 * 256
	}
	b := 16
	for b < n {
		b *= 2
	}
	return b
}

// promptBucket is the padded prompt length of a prefill of prompts of up
// to n tokens with maxNew new tokens: 16, 32, then four sizes an octave
// (pad.Bucket, the training batches' buckets), so that padding adds at
// most a quarter (a power of two padded an 80-token prompt to 128 and a
// 161-token one to 256, and prefill is most of a short generation). The
// extra left padding is masked out and adds exact zeros, which changes no
// bits while every sum along the KV cache is one chain (sharedMaxContext
// slots); where the power of two's cache would be longer than
// that, the power of two stays, so that generation gives the bits it gave
// before (TestPromptBucketKeepsBits).
func promptBucket(n, maxNew int) int {
	if old := bucket(n); powerOfTwoPrompts || bucket(old+maxNew) > sharedMaxContext {
		return old
	}
	return max(16, pad.Bucket(n, 0))
}

// powerOfTwoPrompts, for tests, pads every prompt to the power of two.
var powerOfTwoPrompts bool

// CacheSlots returns the KV-cache slots per row that Generate allocates
// for prompts of up to promptLen tokens and maxNew new tokens: the prompt
// length bucketed, plus maxNew, bucketed again (the memory planner sizes
// generation's KV cache with it).
func CacheSlots(promptLen, maxNew int) int { return bucket(promptBucket(promptLen, maxNew) + maxNew) }

// Generate completes each prompt (token ids, without padding)
// NumGenerations times with a fixed-size KV cache: one prefill, then one
// compiled decode step per token. The attached adapter is used. Results are
// prompt-major: completion j of prompt i is at i*G+j. It checks ctx between
// steps and returns context.Cause(ctx) when done.
func (m *Model) Generate(ctx context.Context, prompts [][]int, cfg GenerateConfig) (out []Completion, err error) {
	defer catch("generate", &err)
	if err := m.checkGenerate(prompts, cfg); err != nil {
		return nil, err
	}
	G := max(cfg.NumGenerations, 1)
	N := len(prompts) * G
	maxLen := 0
	for _, p := range prompts {
		maxLen = max(maxLen, len(p))
	}
	Tp := promptBucket(maxLen, cfg.MaxNewTokens)
	S := CacheSlots(maxLen, cfg.MaxNewTokens)
	batch := LeftPad(prompts, cfg.PadID, Tp)
	ids, mask, pos, err := batch.tensors(m.cfg.VocabSize)
	if err != nil {
		return nil, err
	}
	// With shared prompt caches (prefixcache.go), full-attention layers
	// keep the prompts' keys and values once (prefix, two per such layer)
	// and per row the generated tokens' in S-Tp suffix slots.
	shared := m.sharesPrompt(S)
	layout := ""
	if shared {
		layout = "/shared"
	}
	prefill, err := m.exec(fmt.Sprintf("prefill/G=%d%s", G, layout), func(ctx *mlctx.Context, in []*Node) []*Node {
		return m.prefillGraph(ctx, in[0], in[1], in[2], in[3].Shape().Dimensions[0], G, shared)
	})
	if err != nil {
		return nil, err
	}
	res, err := prefill.Exec(ids, mask, pos, tensors.FromShape(shapes.Make(dtypes.Int8, S)))
	if err != nil {
		return nil, fmt.Errorf("model: generate: prefill: %w", err)
	}
	var prefix, caches []*tensors.Tensor
	for i, r := 0, res[1:]; i < m.cfg.NumHiddenLayers; i++ {
		if shared && !m.cfg.IsSlidingLayer(i) {
			prefix, r = append(prefix, r[0], r[1]), r[2:]
		}
		caches, r = append(caches, r[0], r[1]), r[2:]
	}
	// Sampling on the device (sample_graph.go), the logits stay there
	// (devLogits: the prefill's, each row repeated groups times, then each
	// decode step's) and only the chosen ids come back; on the host they
	// are copied into logits.
	devLogits, groups := res[0], G
	defer func() {
		if devLogits != nil {
			devLogits.FinalizeAll()
		}
	}()
	V := m.cfg.VocabSize
	var logits []float32
	if !m.onDevice(cfg) {
		pl, err := tensors.CopyFlatData[float32](res[0])
		if err != nil {
			return nil, err
		}
		res[0].FinalizeAll()
		devLogits = nil
		logits = make([]float32, N*V)
		for i := range N {
			copy(logits[i*V:(i+1)*V], pl[(i/G)*V:(i/G+1)*V])
		}
	}

	sliding := m.hasSlidingLayers()
	Wc := m.localCacheLen(S)
	decode, err := m.exec("decode"+layout, func(ctx *mlctx.Context, in []*Node) []*Node {
		if sliding {
			return m.decodeGraph(ctx, in[0], in[1], in[2], in[3], in[4], in[5], in[6:], shared)
		}
		return m.decodeGraph(ctx, in[0], in[1], in[2], in[3], nil, nil, in[4:], shared)
	})
	if err != nil {
		return nil, err
	}
	stops := slices.Clone(cfg.StopIDs)
	if !cfg.IgnoreEOS {
		stops = append(stops, m.cfg.EOSTokenIDs...)
	}
	smp := newSampler(cfg, stops, prompts, G, N)
	var dev *deviceSampler
	if devLogits != nil {
		dev = m.newDeviceSampler(cfg, stops, prompts, G, N)
		defer dev.finalize()
	}
	out = make([]Completion, N)
	realLen := make([]int, N)
	kvmask := make([]int32, N*S)
	for i := range N {
		realLen[i] = len(prompts[i/G])
		for t := Tp - realLen[i]; t < Tp; t++ {
			kvmask[i*S+t] = 1
		}
	}
	next := make([]int32, N)
	posNow := make([]int32, N)
	defer func() {
		for _, c := range append(caches, prefix...) {
			c.FinalizeAll()
		}
	}()
	suffix := suffixSlots(0, S-Tp) // shared: the suffix caches' slots now
	var maskBuf, rowMask []int32
	// The decode batch's rows (compact.go): all of them until enough stop.
	lay := identityLayout(N, len(prompts), shared)
	compacts, live, nLive := m.compacts() && !cfg.KeepFinishedRows && dev == nil, make([]bool, N), N
	for step := 0; ; step++ {
		if cfg.onCaches != nil {
			cfg.onCaches(step, caches)
		}
		if cfg.onStep != nil {
			cfg.onStep(step, logits)
		}
		var done bool
		if dev != nil {
			done, err = dev.step(devLogits, groups, out, next)
			devLogits.FinalizeAll()
			devLogits, groups = nil, 1
		} else {
			done, err = smp.step(logits, out, next)
		}
		if err != nil {
			return nil, err
		}
		if done || step+1 >= cfg.MaxNewTokens {
			return out, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		for i := range N {
			kvmask[i*S+Tp+step] = 1
			posNow[i] = int32(realLen[i] + step)
		}
		if compacts {
			n := 0
			for i := range N {
				live[i] = !out[i].Stopped
				if live[i] {
					n++
				}
			}
			if n < nLive {
				nLive = n
				if smaller, ok := planCompaction(lay, live, m.cfg.NumAttentionHeads/m.cfg.NumKeyValueHeads, rowClass); ok {
					// On error the old caches stay, for the deferred finalize.
					c, p, err := m.compactCaches(lay, smaller, caches, prefix)
					if err != nil {
						return nil, err
					}
					caches, prefix, lay = c, p, smaller
					if cfg.onCompact != nil {
						cfg.onCompact(step, lay)
					}
				}
			}
		}
		B := len(lay.rows)
		// The batch's rows of the inputs kept for all of Generate's rows.
		bNext, bPos, bMask := next, posNow, kvmask
		if B != N {
			bNext, bPos = make([]int32, B), make([]int32, B)
			rowMask = rowMask[:0]
			for j, i := range lay.rows {
				bNext[j], bPos[j] = next[i], posNow[i]
				rowMask = append(rowMask, kvmask[i*S:(i+1)*S]...)
			}
			bMask = rowMask
		}
		at, width := Tp+step, S // the full caches' slot of this step's token, their slots
		if shared {
			if sx := suffixSlots(step, S-Tp); sx != suffix {
				if caches, err = m.growSuffix(caches, shared, sx-suffix); err != nil {
					return nil, err
				}
				suffix = sx
			}
			at, width = step, Tp+suffix
		}
		stepMask := bMask
		if width != S {
			// The prompt slots and the suffix slots so far.
			maskBuf = maskBuf[:0]
			for i := range B {
				maskBuf = append(maskBuf, bMask[i*S:i*S+width]...)
			}
			stepMask = maskBuf
		}
		args := []any{
			tensors.FromFlatDataAndDimensions(slices.Clone(bNext), B, 1),
			tensors.FromFlatDataAndDimensions(slices.Clone(bPos), B, 1),
			tensors.FromFlatDataAndDimensions(slices.Clone(stepMask), B, width),
			tensors.FromScalar(int32(at)),
		}
		if sliding {
			c := Tp + step
			args = append(args, tensors.FromFlatDataAndDimensions(ringMask(bMask, B, S, Wc, c), B, Wc),
				tensors.FromScalar(int32(c%Wc)))
		}
		for i, p := 0, prefix; i < m.cfg.NumHiddenLayers; i++ {
			if shared && !m.cfg.IsSlidingLayer(i) {
				args, p = append(args, p[0], p[1]), p[2:]
			}
			for _, c := range caches[2*i : 2*i+2] {
				// Donated: the step writes its slot in place (forms.go).
				d, err := DonateTensorBuffer(c, m.backend, 0)
				if err != nil {
					return nil, fmt.Errorf("model: generate: decode step %d: %w", step, err)
				}
				args = append(args, d)
			}
		}
		res, err := decode.Exec(args...)
		if err != nil {
			return nil, fmt.Errorf("model: generate: decode step %d: %w", step, err)
		}
		for _, c := range caches {
			c.FinalizeAll()
		}
		caches = res[1:]
		if dev != nil {
			devLogits = res[0]
			continue
		}
		// Into the same slice every step: a fresh one (6 MB at batch 32 with
		// a 49K vocabulary) cost more in page faults than the copy.
		// A batch row's logits go to its row (rows that left keep stale ones).
		if err := tensors.ConstFlatData(res[0], func(flat []float32) {
			if B == N {
				copy(logits, flat)
				return
			}
			for j, i := range lay.rows {
				copy(logits[i*V:(i+1)*V], flat[j*V:(j+1)*V])
			}
		}); err != nil {
			return nil, err
		}
		res[0].FinalizeAll()
	}
}

func (m *Model) checkGenerate(prompts [][]int, cfg GenerateConfig) error {
	var errs []error
	if len(prompts) == 0 {
		errs = append(errs, errors.New("model: generate: no prompts"))
	}
	if cfg.MaxNewTokens <= 0 {
		errs = append(errs, fmt.Errorf("model: generate: MaxNewTokens = %d, want > 0", cfg.MaxNewTokens))
	}
	if cfg.MinNewTokens < 0 || cfg.MinNewTokens > cfg.MaxNewTokens {
		errs = append(errs, fmt.Errorf("model: generate: MinNewTokens = %d, want 0…MaxNewTokens (%d)", cfg.MinNewTokens, cfg.MaxNewTokens))
	}
	// Each bad setting named on its own (NaN fails every test).
	for _, c := range []struct {
		ok   bool
		what string
	}{
		{cfg.NumGenerations >= 0, fmt.Sprintf("NumGenerations = %d, want ≥ 0", cfg.NumGenerations)},
		{cfg.TopK >= 0, fmt.Sprintf("TopK = %d, want ≥ 0 (0: off)", cfg.TopK)},
		{cfg.TopP >= 0 && cfg.TopP <= 1, fmt.Sprintf("TopP = %g, want 0…1 (0 or 1: off)", cfg.TopP)},
		{cfg.MinP >= 0 && cfg.MinP <= 1, fmt.Sprintf("MinP = %g, want 0…1 (0: off)", cfg.MinP)},
		{cfg.RepetitionPenalty >= 0 && !math.IsInf(cfg.RepetitionPenalty, 0), fmt.Sprintf("RepetitionPenalty = %g, want finite ≥ 0 (0 or 1: off)", cfg.RepetitionPenalty)},
		{cfg.Temperature >= 0 && !math.IsInf(cfg.Temperature, 0), fmt.Sprintf("Temperature = %g, want finite ≥ 0 (0: greedy)", cfg.Temperature)},
	} {
		if !c.ok {
			errs = append(errs, fmt.Errorf("model: generate: %s", c.what))
		}
	}
	if cfg.Sampler == SampleDevice && cfg.Constraint != nil {
		errs = append(errs, errors.New("model: generate: a Constraint is applied on the host: it cannot be combined with Sampler SampleDevice"))
	}
	if cfg.Sampler < SampleAuto || cfg.Sampler > SampleDevice {
		errs = append(errs, fmt.Errorf("model: generate: unknown Sampler %v", cfg.Sampler))
	}
	if cfg.PadID < 0 || cfg.PadID >= m.cfg.VocabSize {
		errs = append(errs, fmt.Errorf("model: generate: PadID %d outside the vocabulary (%d)", cfg.PadID, m.cfg.VocabSize))
	}
	for i, p := range prompts {
		if len(p) == 0 {
			errs = append(errs, fmt.Errorf("model: generate: prompt %d is empty", i))
		}
		if n := len(p) + cfg.MaxNewTokens; m.cfg.MaxPositionEmbeddings > 0 && n > m.cfg.MaxPositionEmbeddings {
			errs = append(errs, fmt.Errorf("%w: prompt %d has %d tokens + %d new > max_position_embeddings %d",
				ErrPromptTooLong, i, len(p), cfg.MaxNewTokens, m.cfg.MaxPositionEmbeddings))
		}
		for _, id := range p {
			if id < 0 || id >= m.cfg.VocabSize {
				errs = append(errs, fmt.Errorf("model: generate: prompt %d has token id %d outside the vocabulary (%d)", i, id, m.cfg.VocabSize))
				break
			}
		}
	}
	return errors.Join(errs...)
}

// banStops sets the logits of the stop ids to −∞ (HF's
// MinNewTokensLengthLogitsProcessor), so that neither greedy choice nor
// sampling picks them.
func banStops(logits []float32, stops []int) {
	for _, id := range stops {
		if id >= 0 && id < len(logits) {
			logits[id] = float32(math.Inf(-1))
		}
	}
}

// localCacheLen is the length of a sliding-window layer's KV cache when
// the full caches hold S positions: the window, or S if shorter. The cache
// is a ring buffer: cache position p lives in slot p % localCacheLen.
func (m *Model) localCacheLen(S int) int {
	if w := m.cfg.SlidingWindow; m.hasSlidingLayers() && w < S {
		return w
	}
	return S
}

// ringMask returns the [N, Wc] visibility of a sliding layer's ring-buffer
// slots for the token written at cache position c: slot j holds position
// p = c - ((c - j) mod Wc), the last one written there, and is visible when
// p >= 0 and kvmask[p] is set. With Wc = sliding_window the slots hold
// exactly the window c-Wc+1..c (HF: kv_idx > q_idx - window); with Wc = S
// (window >= S) every position so far is in the window anyway.
func ringMask(kvmask []int32, N, S, Wc, c int) []int32 {
	out := make([]int32, N*Wc)
	for j := range Wc {
		p := c - ((c-j)%Wc+Wc)%Wc
		if p < 0 {
			continue
		}
		for i := range N {
			out[i*Wc+j] = kvmask[i*S+p]
		}
	}
	return out
}

// prefillGraph runs the prompts [P, Tp] and returns the last position's
// logits [P, V] followed by each layer's key and value caches, rows
// repeated G times: [P*G, S, nkv, hd] for full-attention layers (prompt
// keys first, zeros after), [P*G, Wc, nkv, hd] ring buffers for
// sliding-window layers (see localCacheLen). With shared, a full-attention
// layer gives instead the prompts' keys and values [P, Tp, nkv, hd] and the
// empty suffix caches [P*G, Sx, nkv, hd] and [P*G, rep+Sx, nkv, hd] with Sx
// = suffixSlots(0, S-Tp) (prefixcache.go).
func (m *Model) prefillGraph(ctx *mlctx.Context, ids, mask, pos *Node, S, G int, shared bool) []*Node {
	f := m.fwd(ctx, true)
	P, Tp := ids.Shape().Dimensions[0], ids.Shape().Dimensions[1]
	h, kvs := f.decoder(ids, pos, f.causalMask(mask), nil, writes{})
	last := Slice(h, AxisRange(), AxisElem(Tp-1), AxisRange()) // [P, 1, H]
	out := []*Node{Reshape(f.lmHead(last), P, m.cfg.VocabSize)}
	nkv, hd := m.cfg.NumKeyValueHeads, m.cfg.HeadDim
	Wc := m.localCacheLen(S)
	grow := func(x *Node, local bool) *Node {
		size := S
		if local {
			size = Wc
		}
		switch {
		case Tp < size:
			x = Concatenate([]*Node{x, Zeros(x.Graph(), shapes.Make(x.DType(), P, size-Tp, nkv, hd))}, 1)
		case Tp > size:
			// Keep the last size positions, position p in slot p % size:
			// element e of the kept slice (position Tp-size+e) goes to slot (r+e) % size.
			x = Slice(x, AxisRange(), AxisRange(Tp-size, Tp))
			if r := (Tp - size) % size; r != 0 {
				x = Concatenate([]*Node{
					Slice(x, AxisRange(), AxisRange(size-r, size)),
					Slice(x, AxisRange(), AxisRange(0, size-r)),
				}, 1)
			}
		}
		if G > 1 {
			x = Reshape(BroadcastToDims(ExpandAxes(x, 1), P, G, size, nkv, hd), P*G, size, nkv, hd)
		}
		return x
	}
	for i, kv := range kvs {
		local := m.cfg.IsSlidingLayer(i)
		if shared && !local {
			rep, sx := m.cfg.NumAttentionHeads/nkv, suffixSlots(0, S-Tp)
			out = append(out, kv.k, kv.v,
				Zeros(ids.Graph(), shapes.Make(kv.k.DType(), P*G, sx, nkv, hd)),
				Zeros(ids.Graph(), shapes.Make(kv.v.DType(), P*G, rep+sx, nkv, hd)))
			continue
		}
		out = append(out, grow(kv.k, local), grow(kv.v, local))
	}
	return out
}

// decodeGraph runs one token per row: ids and pos [N, 1], kvmask [N, S]
// (keys visible to this step, the new one included), writeAt the scalar
// cache index of the new token, and for models with sliding-window layers
// localMask [N, Wc] and localAt, the same for their ring buffers (nil
// otherwise); caches are each layer's keys and values ([N, S, nkv, hd], or
// [N, Wc, nkv, hd] for sliding layers). With shared, a full-attention
// layer's caches are the prompts' keys and values, then its suffix keys
// and values (prefillGraph), writeAt is the suffix slot and kvmask covers
// the prompt slots, then the suffix slots. It returns logits [N, V]
// followed by the updated caches (two per layer: not the prompts').
func (m *Model) decodeGraph(ctx *mlctx.Context, ids, pos, kvmask, writeAt, localMask, localAt *Node, caches []*Node, shared bool) []*Node {
	f := m.fwd(ctx, true)
	N := kvmask.Shape().Dimensions[0]
	kvs := make([]kvState, m.cfg.NumHiddenLayers)
	for i := range kvs {
		if shared && !m.cfg.IsSlidingLayer(i) {
			kvs[i].pk, kvs[i].pv, caches = caches[0], caches[1], caches[2:]
		}
		kvs[i].k, kvs[i].v, caches = caches[0], caches[1], caches[2:]
	}
	visible := func(x *Node) *Node {
		n := x.Shape().Dimensions[1]
		return Reshape(NotEqual(x, ScalarZero(x.Graph(), x.DType())), N, 1, n)
	}
	allowed := masks{full: visible(kvmask)}
	at := writes{full: writeAt}
	if localMask != nil {
		allowed.local, at.local = visible(localMask), localAt
	}
	h, newKV := f.decoder(ids, pos, allowed, kvs, at)
	out := []*Node{Reshape(f.lmHead(h), N, m.cfg.VocabSize)}
	for _, kv := range newKV {
		out = append(out, kv.k, kv.v)
	}
	return out
}

// cand is a candidate token with its (log-)weight.
type cand struct {
	id int
	p  float64
}

// byProbDesc orders by weight, high first, ties by id (deterministic).
func byProbDesc(a, b cand) int {
	switch {
	case a.p > b.p:
		return -1
	case a.p < b.p:
		return 1
	}
	return a.id - b.id
}

// topK returns the k best candidates (by byProbDesc), sorted, in
// O(n log k) with a min-heap, instead of sorting the whole vocabulary.
func topK(cs []cand, k int) []cand {
	h := make([]cand, 0, k) // min-heap: h[0] is the worst kept
	worse := func(i, j int) bool { return byProbDesc(h[i], h[j]) > 0 }
	down := func(i int) {
		for {
			l, w := 2*i+1, i
			if l < len(h) && worse(l, w) {
				w = l
			}
			if l+1 < len(h) && worse(l+1, w) {
				w = l + 1
			}
			if w == i {
				return
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
	for _, c := range cs {
		if len(h) < k {
			h = append(h, c)
			for i := len(h) - 1; i > 0 && worse(i, (i-1)/2); i = (i - 1) / 2 {
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
		} else if byProbDesc(c, h[0]) < 0 {
			h[0] = c
			down(0)
		}
	}
	slices.SortFunc(h, byProbDesc)
	return h
}

// pick chooses the next token from one row's logits.
func pick(logits []float32, prefix []int, cfg GenerateConfig, rng *rand.Rand) (int, error) {
	var scratch chooseScratch
	return pickWith(&scratch, logits, prefix, cfg, rng)
}

// pickWith is pick with a scratch slice reused across calls: a fresh
// vocabulary-sized slice per token cost more (page faults, clearing) than
// the sampling itself.
func pickWith(scratch *chooseScratch, logits []float32, prefix []int, cfg GenerateConfig, rng *rand.Rand) (int, error) {
	allowed, err := allowedNext(cfg.Constraint, prefix, len(logits))
	if err != nil {
		return 0, err
	}
	var u float64
	if cfg.Temperature != 0 {
		u = rng.Float64()
	}
	return choose(scratch, logits, allowed, cfg, u), nil
}

// allowedNext returns the constraint's allowed next tokens after prefix
// (nil: all), checked against the vocabulary size.
func allowedNext(c Constraint, prefix []int, vocab int) ([]int, error) {
	if c == nil {
		return nil, nil
	}
	allowed := c.Allowed(prefix)
	if allowed != nil && len(allowed) == 0 {
		return nil, fmt.Errorf("model: generate: constraint allows no token after %v", prefix)
	}
	for _, id := range allowed {
		if id < 0 || id >= vocab {
			return nil, fmt.Errorf("model: generate: constraint allows token %d outside the vocabulary (%d)", id, vocab)
		}
	}
	return allowed, nil
}

// choose picks a token from one row's logits among allowed (nil: all):
// the best one when greedy, else the one where u01·(total weight) falls
// in the filtered distribution. u01 is drawn by the caller, so that rows
// can be chosen in parallel while the random stream stays in row order.
func choose(scratch *chooseScratch, logits []float32, allowed []int, cfg GenerateConfig, u01 float64) int {
	if cfg.Temperature == 0 {
		if allowed == nil {
			best := 0
			for c := 1; c < len(logits); c++ {
				if logits[c] > logits[best] {
					best = c
				}
			}
			return best
		}
		best := allowed[0]
		for _, c := range allowed[1:] {
			if logits[c] > logits[best] {
				best = c
			}
		}
		return best
	}
	n := len(logits)
	if allowed != nil {
		n = len(allowed)
	}
	if cs, sum, tok, ok := chooseFast(scratch, logits, allowed, cfg, u01); ok {
		if cs == nil {
			return tok
		}
		return chooseFiltered(cs, sum, cfg, u01)
	}
	cs := slices.Grow(scratch.cs[:0], n)[:n]
	scratch.cs = cs
	mx := math.Inf(-1)
	// Two loops rather than an id function per candidate: this loop runs
	// over the whole vocabulary for every row and token.
	if allowed == nil {
		for c := range cs {
			l := float64(logits[c]) / cfg.Temperature
			cs[c] = cand{c, l}
			mx = max(mx, l)
		}
	} else {
		for i, c := range allowed {
			l := float64(logits[c]) / cfg.Temperature
			cs[i] = cand{c, l}
			mx = max(mx, l)
		}
	}
	if cfg.TopK > 0 && cfg.TopK < len(cs) {
		cs = topK(cs, cfg.TopK)
	}
	sum := 0.0
	for i := range cs {
		cs[i].p = math.Exp(cs[i].p - mx)
		sum += cs[i].p
	}
	return chooseFiltered(cs, sum, cfg, u01)
}

// chooseFiltered applies top-p and min-p to the candidates cs (weights
// exp(logit/T − max), summing to sum) and picks the one where u01 of the
// kept weight falls.
func chooseFiltered(cs []cand, sum float64, cfg GenerateConfig, u01 float64) int {
	if cfg.TopP > 0 && cfg.TopP < 1 {
		slices.SortFunc(cs, byProbDesc)
		acc := 0.0
		for i := range cs {
			acc += cs[i].p / sum
			if acc >= cfg.TopP {
				cs = cs[:i+1]
				break
			}
		}
		sum = 0
		for _, c := range cs {
			sum += c.p
		}
	}
	if cfg.MinP > 0 {
		// cs[i].p is exp(logit − max) and the most likely token is still
		// in cs, so its probability is 1 on this scale.
		kept := cs[:0]
		sum = 0
		for _, c := range cs {
			if c.p >= cfg.MinP {
				kept = append(kept, c)
				sum += c.p
			}
		}
		cs = kept
	}
	u := u01 * sum
	for _, c := range cs {
		u -= c.p
		if u <= 0 {
			return c.id
		}
	}
	return cs[len(cs)-1].id
}

// penalizeRepeats applies HF's repetition penalty to one row's logits: the
// logit of every token of prompt or generated is divided by penalty when
// positive and multiplied by it when negative.
func penalizeRepeats(logits []float32, prompt, generated []int, penalty float64) {
	seen := make(map[int]bool, len(prompt)+len(generated))
	for _, ids := range [][]int{prompt, generated} {
		for _, id := range ids {
			if id < 0 || id >= len(logits) || seen[id] {
				continue
			}
			seen[id] = true
			if l := float64(logits[id]); l < 0 {
				logits[id] = float32(l * penalty)
			} else {
				logits[id] = float32(l / penalty)
			}
		}
	}
}
