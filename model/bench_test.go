package model_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/model"
)

var (
	benchOnce  sync.Once
	benchModel *model.Model
	benchErr   error
)

// smolLM2 returns a SmolLM2-135M-shaped model with random weights.
func smolLM2(b *testing.B) *model.Model {
	b.Helper()
	if testing.Short() {
		b.Skip("SmolLM2-shaped benchmarks are slow; skipped under -short")
	}
	benchOnce.Do(func() { benchModel, benchErr = model.New(model.SmolLM2Shaped(), 1, nil) })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	benchModel.SetAdapter(nil)
	return benchModel
}

// flopsPerToken is 2·(matmul weights) plus attention over ctx keys.
func flopsPerToken(c model.Config, ctx int) float64 {
	h, hd, L := c.HiddenSize, c.HeadDim, c.NumHiddenLayers
	q, kv := c.NumAttentionHeads*hd, c.NumKeyValueHeads*hd
	perLayer := h*q + 2*h*kv + q*h + 3*h*c.IntermediateSize
	attn := 4 * ctx * q // scores + weighted values
	return float64(2*(L*perLayer+h*c.VocabSize) + L*attn)
}

func prompts(n, length int) [][]int {
	ps := make([][]int, n)
	for i := range ps {
		for t := range length {
			ps[i] = append(ps[i], 1+(i*131+t*17)%4000)
		}
	}
	return ps
}

// BenchmarkSmolLM2ShapedPrefill times the prefill of one 128-token prompt.
func BenchmarkSmolLM2ShapedPrefill(b *testing.B) {
	m := smolLM2(b)
	const T = 128
	cfg := model.GenerateConfig{MaxNewTokens: 1, IgnoreEOS: true}
	if _, err := m.Generate(context.Background(), prompts(1, T), cfg); err != nil { // compile
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := m.Generate(context.Background(), prompts(1, T), cfg); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(T/sec, "tokens/s")
	b.ReportMetric(T*flopsPerToken(m.Config(), T/2)/sec/1e9, "GFLOP/s")
}

// BenchmarkSmolLM2ShapedDecode times KV-cache decode steps at batch 1 and 8
// (prompt of 32 tokens, 32 new tokens; prefill excluded).
func BenchmarkSmolLM2ShapedDecode(b *testing.B) {
	for _, batch := range []int{1, 8} {
		b.Run(map[int]string{1: "batch=1", 8: "batch=8"}[batch], func(b *testing.B) {
			m := smolLM2(b)
			const newTokens = 32
			cfg := model.GenerateConfig{MaxNewTokens: newTokens, IgnoreEOS: true, NumGenerations: batch, Sampling: model.Sampling{Temperature: 1}, Seed: 1}
			if _, err := m.Generate(context.Background(), prompts(1, 32), cfg); err != nil { // compile
				b.Fatal(err)
			}
			var decode time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				start := time.Now()
				// Time the prefill alone to subtract it.
				if _, err := m.Generate(context.Background(), prompts(1, 32), model.GenerateConfig{MaxNewTokens: 1, NumGenerations: batch}); err != nil {
					b.Fatal(err)
				}
				prefill := time.Since(start)
				b.StartTimer()
				start = time.Now()
				if _, err := m.Generate(context.Background(), prompts(1, 32), cfg); err != nil {
					b.Fatal(err)
				}
				decode += time.Since(start) - prefill
			}
			toks := float64(batch * (newTokens - 1) * b.N)
			b.ReportMetric(toks/decode.Seconds(), "tokens/s")
			b.ReportMetric(toks*flopsPerToken(m.Config(), 48)/decode.Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkSmolLM2ShapedForwardBackward times one LoRA (r=8 on q,v)
// forward+backward of the token log-prob loss over 2×64 tokens.
func BenchmarkSmolLM2ShapedForwardBackward(b *testing.B) {
	m := smolLM2(b)
	if _, err := lora.Attach(m, lora.Config{R: 8, Alpha: 16}); err != nil {
		b.Fatal(err)
	}
	defer func() { m.SetAdapter(nil); m.SetBaseTrainable(true) }()
	const B, T = 2, 64
	batch := model.LeftPad(prompts(B, T), 0, T)
	toT := func(rows [][]int) *tensors.Tensor {
		out := make([][]int32, len(rows))
		for i, r := range rows {
			for _, v := range r {
				out[i] = append(out[i], int32(v))
			}
		}
		return tensors.FromValue(out)
	}
	e, err := mlctx.NewExec(m.Backend(), m.Context(), func(ctx *mlctx.Context, ids, mask, pos *Node) []*Node {
		lp, _ := model.TokenLogProbs(m.LogitsGraph(ctx, ids, mask, pos), ids, 1)
		return ctx.BuildTrainableVariablesGradientsGraph(ReduceAllSum(lp))
	})
	if err != nil {
		b.Fatal(err)
	}
	args := []any{toT(batch.IDs), toT(batch.Mask), toT(batch.Positions)}
	if _, err := e.Exec(args...); err != nil { // compile
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := e.Exec(args...); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(B*T/sec, "tokens/s")
	// Backward ≈ 2× forward (input gradients; LoRA weight gradients are tiny).
	b.ReportMetric(3*B*T*flopsPerToken(m.Config(), T/2)/sec/1e9, "GFLOP/s")
}

// BenchmarkSmolLM2ShapedDecodeBatch32 times the decode step of bench/grpostep's
// generation-heavy variant: 4 prompts of 80 tokens × G=8 (batch 32; contexts
// of 256 slots: the 128-slot prompt caches shared by each group, suffix
// caches of 16 and 32 slots here), sampling. One iteration is a 17-token
// generation minus a 1-token one (the same prefill): the first 16 decode
// steps, which read fewer suffix slots than the later steps of a 128-token
// generation (bench/grpostep -decodeonly times those). It reports wall and
// process-CPU milliseconds per step.
func BenchmarkSmolLM2ShapedDecodeBatch32(b *testing.B) {
	m := smolLM2(b)
	const steps = 16
	ps := prompts(4, 80)
	gen := func(n int) (wall, cpu float64) {
		t0, c0 := time.Now(), cpuSeconds()
		cfg := model.GenerateConfig{MaxNewTokens: n, IgnoreEOS: true, NumGenerations: 8, Sampling: model.Sampling{Temperature: 1}, Seed: 1}
		if _, err := m.Generate(context.Background(), ps, cfg); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0).Seconds(), cpuSeconds() - c0
	}
	gen(2) // compile
	var wall, cpu float64
	b.ResetTimer()
	for range b.N {
		w0, c0 := gen(1)
		w1, c1 := gen(1 + steps)
		wall, cpu = wall+w1-w0, cpu+c1-c0
	}
	n := float64(steps * b.N)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(wall/n*1e3, "ms/step")
	b.ReportMetric(cpu/n*1e3, "cpu-ms/step")
}
