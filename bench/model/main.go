// Command model times whole-model workloads of a SmolLM2-135M-shaped model
// (random weights, float32) on grpokit's pure-Go backend and prints them
// beside bench/torch_model.py's numbers for the same workloads:
//
//   - prefill: forward pass to logits of 8 sequences × 128 tokens;
//
//   - decode: one KV-cache decode step at batch 8 (Generate, greedy);
//
//   - fwd+bwd: a GRPO-sized step: log-probs of 16 sequences × 90 tokens and
//     the gradient of their sum with respect to every weight.
//
//     go run ./bench/model [-torch torch_model.json] [-reps 3]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/grpokit/grpokit/bench/internal/torchref"
	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/internal/gemm"
	"github.com/grpokit/grpokit/model"
)

// Workload sizes; bench/torch_model.py uses the same.
const (
	prefillB, prefillT = 8, 128
	decodeB, promptT   = 8, 16
	decodeSteps        = 16
	gradB, gradT       = 16, 90
)

func main() {
	torchFile := flag.String("torch", "", "JSON written by bench/torch_model.py (optional)")
	reps := flag.Int("reps", 3, "timed repetitions per workload (fastest reported)")
	only := flag.String("only", "", "run only this workload: prefill, decode or fwdbwd")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the timed calls to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	torch, torchInfo, err := torchref.Load(*torchFile, "seconds")
	if err != nil {
		log.Fatalf("model bench: %v", err)
	}
	m, err := model.New(model.SmolLM2Shaped(), 1, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("grpokit model benchmark: SmolLM2-135M-shaped (%d params, f32), backend %q, gemm %v (hook: %v), GOMAXPROCS=%d\n",
		m.NumParams(), backend.ResolveFor("", int64(m.NumParams())), gemm.Active(), errOr(backend.FastDotGeneral(), "on"), runtime.GOMAXPROCS(0))
	if torchInfo != "" {
		fmt.Printf("PyTorch: %s\n", torchInfo)
	}
	fmt.Printf("seconds per call, best of %d (lower is better)\n\n", *reps)
	fmt.Printf("| %-44s | %9s | %9s | %7s | %12s |\n", "workload", "ours s", "PyTorch s", "speedup", "ours tok/s")
	fmt.Printf("|%s|%s|%s|%s|%s|\n", dashes(46), dashes(11), dashes(11), dashes(9), dashes(14))
	type work struct {
		key, name string
		tokens    int
		setup     func() func() float64 // returns one measurement in seconds
	}
	for _, w := range []work{
		{"prefill", fmt.Sprintf("prefill %d×%d tokens (logits)", prefillB, prefillT), prefillB * prefillT, func() func() float64 { return timed(prefill(m)) }},
		{"decode", fmt.Sprintf("decode step, batch %d (KV cache)", decodeB), decodeB, func() func() float64 { return decodeStep(m) }},
		{"fwdbwd", fmt.Sprintf("fwd+bwd %d×%d tokens, all weights", gradB, gradT), gradB * gradT, func() func() float64 { return timed(fwdBwd(m)) }},
	} {
		if *only != "" && *only != w.key {
			continue
		}
		f := w.setup()
		f() // warm-up: compiles the graphs
		var ts []float64
		for range *reps {
			ts = append(ts, f())
		}
		slices.Sort(ts)
		s := ts[0]
		ref, speed := "-", "-"
		if v, ok := torch[w.key]; ok && v > 0 {
			ref, speed = fmt.Sprintf("%.3f", v), fmt.Sprintf("%.2f×", v/s)
		}
		fmt.Printf("| %-44s | %9.3f | %9s | %7s | %12.1f |\n", w.name, s, ref, speed, float64(w.tokens)/s)
	}
	fmt.Printf("\nspeedup = PyTorch time / ours.\n")
}

func errOr(err error, ok string) string {
	if err != nil {
		return err.Error()
	}
	return ok
}

func dashes(n int) string { return string(slices.Repeat([]byte{'-'}, n)) }

// batch returns int32 ids, mask and positions tensors [b, t] of fixed pseudo-random tokens.
func batch(b, t, vocab int) (ids, mask, pos *tensors.Tensor) {
	fi, fm, fp := make([]int32, b*t), make([]int32, b*t), make([]int32, b*t)
	for i := range fi {
		fi[i] = int32((i*7919 + 13) % vocab)
		fm[i] = 1
		fp[i] = int32(i % t)
	}
	return tensors.FromFlatDataAndDimensions(fi, b, t), tensors.FromFlatDataAndDimensions(fm, b, t),
		tensors.FromFlatDataAndDimensions(fp, b, t)
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}

func prefill(m *model.Model) func() {
	ids, mask, pos := batch(prefillB, prefillT, m.Config().VocabSize)
	e := must(mlctx.NewExec(m.Backend(), m.Context(), func(ctx *mlctx.Context, ids, mask, pos *Node) *Node {
		return m.LogitsGraph(ctx, ids, mask, pos)
	}))
	return func() {
		out := must(e.Exec(ids, mask, pos))
		out[0].FinalizeAll()
	}
}

// timed turns a call into a measurement of its duration.
func timed(f func()) func() float64 {
	return func() float64 {
		t0 := time.Now()
		f()
		return time.Since(t0).Seconds()
	}
}

// decodeStep measures one decode step: Generate with 1+decodeSteps new
// tokens minus Generate with 1 (same prefill), divided by decodeSteps.
func decodeStep(m *model.Model) func() float64 {
	prompts := make([][]int, decodeB)
	for i := range prompts {
		for j := range promptT {
			prompts[i] = append(prompts[i], (i*131+j*17+5)%m.Config().VocabSize)
		}
	}
	gen := func(n int) time.Duration {
		t0 := time.Now()
		must(m.Generate(context.Background(), prompts, model.GenerateConfig{MaxNewTokens: n, IgnoreEOS: true}))
		return time.Since(t0)
	}
	return func() float64 {
		short := gen(1)
		long := gen(1 + decodeSteps)
		return (long - short).Seconds() / decodeSteps
	}
}

func fwdBwd(m *model.Model) func() {
	ids, mask, pos := batch(gradB, gradT, m.Config().VocabSize)
	vars := m.TrainableVariables()
	e := must(mlctx.NewExec(m.Backend(), m.Context(), func(ctx *mlctx.Context, ids, mask, pos *Node) *Node {
		lp, _ := model.TokenLogProbs(m.LogitsGraph(ctx, ids, mask, pos), ids, 1)
		loss := ReduceAllSum(Mul(lp, ConvertDType(mask, lp.DType())))
		var ws []*Node
		for _, v := range vars {
			ws = append(ws, v.ValueGraph(ids.Graph()))
		}
		// Sum every gradient so none is pruned, without copying them out.
		total := loss
		for _, g := range Gradient(loss, ws...) {
			total = Add(total, ReduceAllSum(g))
		}
		return total
	}))
	return func() {
		out := must(e.Exec(ids, mask, pos))
		out[0].FinalizeAll()
	}
}
