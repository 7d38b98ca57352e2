// Command grpostep times whole GRPO optimizer steps through grpokit's public
// API (model.New, lora.Attach, grpo.NewLMPolicy, grpo.Trainer) on a
// SmolLM2-135M-shaped model (random float32 weights) and prints them beside
// bench/torch_grpostep.py's plain-PyTorch twin of the same step:
//
//   - full: 4 prompts × G=4 of 80 prompt tokens, 6 sampled tokens (forced:
//     MinCompletionLength = MaxCompletionLength), log-probs, the clipped
//     GRPO loss, backward through every weight, gradient clipping, AdamW;
//   - lora: the same step training LoRA r=16 (alpha 32) on every linear
//     layer of the decoder;
//   - genheavy: 4 prompts × G=8, 64 sampled tokens (micro-batches of 8);
//     with -decode it also times one decode step at batch 32 and compares
//     it with the memory-bandwidth bound of reading the weights once per
//     step (-decodeonly: that alone);
//   - varlen: the LoRA step with completions sampled until EOS, 4 prompts ×
//     G=4, micro-batches of 8, each row stopping after a fixed scheduled
//     length between 16 and 255 tokens (varlen.go; the same schedule on
//     both sides), reported also as useful (completion) tokens per second;
//     besides the step it times one generation with finished rows dropped
//     from the batch (model.Generate's default) and one with them kept.
//
// The first step compiles every graph and is reported apart; the other
// steps give medians. Metrics come from the Trainer's own timing/generate,
// timing/reward and train_time.
//
// -model DIR runs a Hugging Face folder instead (for instance one that
// bench/randomhf wrote at a real model's shapes), -dtype bf16 computes in
// bfloat16, and -prompts, -g, -prompt-len, -new-tokens and -micro-batch
// change the variant's step; -decode also times a decode step at batch
// prompts·g, against the time to read the weights once at -bandwidth GB/s
// (a device's memory bandwidth; default: this machine's, measured). -json
// writes the figures for scripts (the GPU kit's summary):
//
//	grpostep -model /tmp/qwen2.5-0.5b -dtype bf16 -variant lora -prompts 8 -g 8 -new-tokens 256 -decode -bandwidth 3350
//
//	go run ./bench/grpostep [-variant full|lora|genheavy|varlen] [-steps 3] [-torch torch.json]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/internal/gemm"
	"github.com/grpokit/grpokit/internal/vec32"
	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
)

// variant is one benchmarked step; bench/torch_grpostep.py has the same.
type variant struct {
	prompts, g, promptLen, newTokens int
	batchSize, accum                 int  // micro-batch rows × micro-batches = prompts·g
	lora                             bool // LoRA r=16 on every linear layer, else full fine-tuning
	decode                           bool // also time a decode step at batch prompts·g
	varlen                           bool // completions end on the schedule of varlen.go, newTokens at most
}

var variants = map[string]variant{
	"full":     {prompts: 4, g: 4, promptLen: 80, newTokens: 6, batchSize: 16, accum: 1},
	"lora":     {prompts: 4, g: 4, promptLen: 80, newTokens: 6, batchSize: 16, accum: 1, lora: true},
	"genheavy": {prompts: 4, g: 8, promptLen: 80, newTokens: 64, batchSize: 8, accum: 4},
	"varlen":   {prompts: 4, g: 4, promptLen: 80, newTokens: 256, batchSize: 8, accum: 2, lora: true, varlen: true},
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		log.Fatalf("grpostep: %v", err)
	}
}

// tinyShape is the model of -tiny, for the smoke test.
func tinyShape() model.Config {
	return model.Config{
		ModelType: "llama", VocabSize: 512, HiddenSize: 64, IntermediateSize: 128,
		NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16, MaxPositionEmbeddings: 512,
		RMSNormEps: 1e-5, RopeTheta: 10000, TieWordEmbeddings: true, HiddenAct: "silu", BOSTokenID: 1, EOSTokenIDs: []int{2},
	}
}

func run(args []string, w io.Writer) (err error) {
	fs := flag.NewFlagSet("grpostep", flag.ContinueOnError)
	name := fs.String("variant", "full", "full, lora, genheavy or varlen")
	steps := fs.Int("steps", 3, "timed steps after the first (compiling) one")
	torchFile := fs.String("torch", "", "JSON written by bench/torch_grpostep.py, or several comma-separated (eager, compile): the ratio is against the fastest (optional)")
	trlFile := fs.String("trl", "", "JSON written by bench/trl/grpostep.py: TRL's GRPOTrainer on the same step, given its own ratio (optional; not an anchor)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed steps to this file")
	modelDir := fs.String("model", "", "a Hugging Face model folder instead of SmolLM2-135M's shape with random weights")
	dtype := fs.String("dtype", "f32", "compute dtype: f32 or bf16")
	prompts := fs.Int("prompts", 0, "prompts per step (0: the variant's)")
	g := fs.Int("g", 0, "completions per prompt (0: the variant's)")
	promptLen := fs.Int("prompt-len", 0, "prompt tokens (0: the variant's)")
	newTokens := fs.Int("new-tokens", 0, "sampled tokens, forced (0: the variant's)")
	microBatch := fs.Int("micro-batch", 0, "rows per micro-batch, dividing prompts·g (0: the variant's, or all rows when -prompts or -g is set)")
	decodeToo := fs.Bool("decode", false, "also time a decode step at batch prompts·g against the memory-bandwidth bound")
	bandwidthGBs := fs.Float64("bandwidth", 0, "memory bandwidth in GB/s for the decode bound (a GPU's); 0 measures this machine's")
	jsonOut := fs.String("json", "", "write the figures as JSON to this file")
	firstProfile := fs.String("firstprofile", "", "write a CPU profile of the first (compiling) step to this file")
	tiny := fs.Bool("tiny", false, "a tiny model instead of SmolLM2-135M's shape (smoke test)")
	decodeOnly := fs.Bool("decodeonly", false, "only the decode step at the variant's batch against the bandwidth bound (no training)")
	checkpointing := fs.Bool("gradient-checkpointing", true, "recompute each decoder layer in the backward pass (grpo.Config.GradientCheckpointing; TRL's default, on; -gradient-checkpointing=false keeps the activations)")
	opTrace := fs.Bool("opstats", false, "trace every op of the timed steps' training parts (with -decodeonly: of one generation) and print where cores idle, by op (must come before any other use of the go backend in the process)")
	compare := fs.Bool("compare", true, "varlen: also time one generation with finished rows dropped and one with them kept")
	genOnly := fs.Bool("genonly", false, "only varlen's generation with finished rows dropped against kept, after a first (compiling) round (no training)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	v, ok := variants[*name]
	if !ok || *steps < 1 {
		return fmt.Errorf("unknown -variant %q (full, lora, genheavy, varlen) or -steps %d < 1", *name, *steps)
	}
	if v, err = v.with(*prompts, *g, *promptLen, *newTokens, *microBatch); err != nil {
		return err
	}
	v.decode = v.decode || *decodeToo || *decodeOnly
	if v.decode && v.newTokens < 2 {
		return fmt.Errorf("-new-tokens %d: timing a decode step needs at least 2", v.newTokens)
	}
	compute, err := model.ParseCompute(*dtype)
	if err != nil {
		return err
	}
	runs, err := loadTorchRuns(*torchFile)
	if err != nil {
		return err
	}
	trlRuns, err := loadTorchRuns(*trlFile)
	if err != nil {
		return err
	}
	if len(trlRuns) > 0 && *name != "full" && *name != "lora" {
		return fmt.Errorf("-trl: bench/trl/grpostep.py runs the full and lora steps, not %q", *name)
	}

	if *opTrace {
		if err := backend.EnableOpTrace(); err != nil {
			return err
		}
	}
	shape, shapeName := model.SmolLM2Shaped(), "SmolLM2-135M shape"
	if *tiny {
		shape, shapeName = tinyShape(), "tiny shape"
	}
	var m *model.Model
	if *modelDir != "" {
		m, err = model.Load(*modelDir, &model.Options{Compute: compute})
		shapeName = fmt.Sprintf("%s (%s)", *modelDir, m.Config().ModelType)
	} else {
		m, err = model.New(shape, 1, &model.Options{Compute: compute})
	}
	if err != nil {
		return err
	}
	bw := bandwidthSpec{gbs: *bandwidthGBs, small: *tiny || *modelDir != ""}
	res := results{Variant: *name, Model: shapeName, Params: m.NumParams(), DType: compute.String(),
		Prompts: v.prompts, G: v.g, PromptLen: v.promptLen, NewTokens: v.newTokens, LoRA: v.lora}
	defer func() {
		if err == nil && *jsonOut != "" {
			err = res.write(*jsonOut)
		}
	}()
	if *decodeOnly {
		return reportDecode(w, m, v, bw, *cpuProfile, *opTrace, &res)
	}
	var adapter *lora.Adapter
	if v.lora {
		adapter, err = lora.Attach(m, lora.Config{R: 16, Alpha: 32, Seed: 1,
			TargetModules: []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}})
		if err != nil {
			return err
		}
	}
	lm, err := grpo.NewLMPolicy(m, adapter, nil, &grpo.LMPolicyOptions{NoReference: true})
	if err != nil {
		return err
	}
	var policy grpo.Policy = lm
	sched := &schedPolicy{LMPolicy: lm, m: m}
	if v.varlen {
		policy = sched
	}
	if *genOnly {
		if !v.varlen {
			return fmt.Errorf("-genonly needs -variant varlen")
		}
		examples := make([]dataset.Example, v.prompts)
		for i := range examples {
			examples[i] = dataset.Example{PromptIDs: promptIDs(i, v.promptLen, m.Config().VocabSize), Answer: strconv.Itoa(i)}
		}
		fmt.Fprintf(w, "grpokit varlen generation: %s, %d prompts × G=%d of %d tokens, LoRA r=16; gemm kernels %v, GOMAXPROCS=%d, %s\nfirst round (compiles): ",
			shapeName, v.prompts, v.g, v.promptLen, gemm.Active(), runtime.GOMAXPROCS(0), cpuModel())
		if err := compareCompaction(w, sched, examples, v); err != nil {
			return err
		}
		fmt.Fprintf(w, "second round: ")
		return compareCompaction(w, sched, examples, v)
	}
	cfg := grpo.DefaultConfig()
	cfg.NumGenerations = v.g
	cfg.BatchSize, cfg.GradientAccumulationSteps = v.batchSize, v.accum
	cfg.MaxPromptLength = v.promptLen
	cfg.MaxCompletionLength, cfg.MinCompletionLength = v.newTokens, v.newTokens
	if v.varlen {
		cfg.MinCompletionLength = 0
	}
	cfg.ShuffleDataset = false
	cfg.LoggingSteps = 0
	cfg.MaxSteps = 1 + *steps
	cfg.GradientCheckpointing = *checkpointing
	tr, err := grpo.NewTrainer(policy, cfg, reward.Named{Name: "noise", Weight: 1, Scorer: noise()})
	if err != nil {
		return err
	}
	// As the grpokit command runs: $GRPOKIT_MEMORY_LIMIT, and Go's memory
	// limit set to the plan.
	budget, err := memplan.BudgetFromEnv()
	if err != nil {
		return err
	}
	tr.Memory, tr.GCLimit = &budget, true

	sampled := fmt.Sprintf("%d sampled tokens (forced)", v.newTokens)
	if v.varlen {
		sampled = fmt.Sprintf("completions sampled until EOS, which a fixed schedule puts after 16–255 tokens (at most %d)", v.newTokens)
	}
	fmt.Fprintf(w, "grpokit grpostep %q: %s (%d params, %s), %d prompts × G=%d, %d prompt tokens, %s, micro-batches %d×%d, %s\n",
		*name, shapeName, m.NumParams(), compute, v.prompts, v.g, v.promptLen, sampled, v.accum, v.batchSize, map[bool]string{true: "LoRA r=16 on all linear layers", false: "full fine-tuning"}[v.lora])
	fmt.Fprintf(w, "grpokit: backend %q, gemm kernels %v (GRPOKIT_GEMM=%q), element-wise %v, DotGeneral hook: %v, fast ops: %v, huge pages (GRPOKIT_HUGEPAGES=0 turns off): %v, GOMAXPROCS=%d, %s\n",
		backend.ResolveFor("", int64(m.NumParams())), gemm.Active(), os.Getenv("GRPOKIT_GEMM"), vec32.Active(), errOr(backend.FastDotGeneral(), "on"),
		errOr(backend.FastElementwise(), "on"), backend.HugePages(), runtime.GOMAXPROCS(0), cpuModel())
	for _, r := range runs {
		if r.info != "" {
			fmt.Fprintf(w, "PyTorch: %s\n", r.info)
		}
	}
	for _, r := range trlRuns {
		if r.info != "" {
			fmt.Fprintf(w, "TRL: %s\n", r.info)
		}
	}

	var ms []grpo.Metrics
	var prof cpuProfiler
	defer prof.stop()
	if err := prof.start(*firstProfile); err != nil {
		return err
	}
	var cpuSeconds []float64 // process CPU time of each step
	var tokenRates []float64 // varlen: completion tokens per second of each step
	tokensSeen := 0
	var trainWindows []window // the training parts of the timed steps, for -opstats
	var profErr error
	cpuMark := cpuTime()
	sysMark, faultMark := sysTimeFaults()
	tr.OnStep = func(m grpo.Metrics) {
		ms = append(ms, m)
		now := cpuTime()
		sys, faults := sysTimeFaults()
		cpuSeconds = append(cpuSeconds, now-cpuMark)
		fmt.Fprintf(w, "step %d: %.2f s (generate %.2f s, reward %.3f s, train %.2f s), %.2f CPU s (system %.2f s, %d minor page faults), peak RSS so far %.0f MB\n",
			len(ms), m["step_time"], m["timing/generate"], m["timing/reward"], m["train_time"], now-cpuMark, sys-sysMark, faults-faultMark, peakRSSMB())
		if v.varlen {
			n := 0
			for _, t := range sched.tokens[tokensSeen:] {
				n += t
			}
			tokensSeen = len(sched.tokens)
			tokenRates = append(tokenRates, float64(n)/m["step_time"])
			fmt.Fprintf(w, "step %d: %d completion tokens, %.1f tokens/s\n", len(ms), n, float64(n)/m["step_time"])
		}
		if *opTrace && len(ms) > 1 {
			end := time.Now()
			trainWindows = append(trainWindows, window{end.Add(-time.Duration(m["train_time"] * 1e9)), end})
		}
		if len(ms) == 1 {
			prof.stop()
			profErr = prof.start(*cpuProfile)
			if *opTrace {
				backend.StartOpTrace()
			}
		}
		cpuMark = cpuTime()
		sysMark, faultMark = sysTimeFaults()
	}
	data := make(dataset.SliceDataset, v.prompts*cfg.MaxSteps)
	for i := range data {
		data[i] = dataset.Example{PromptIDs: promptIDs(i, v.promptLen, m.Config().VocabSize), Answer: strconv.Itoa(i)}
	}
	if err := tr.Train(context.Background(), data); err != nil {
		return err
	}
	prof.stop()
	if profErr != nil {
		return profErr
	}
	if *opTrace {
		printOpStats(w, backend.StopOpTrace(), trainWindows, runtime.GOMAXPROCS(0))
	}

	med := func(key string) float64 {
		var xs []float64
		for _, m := range ms[1:] {
			xs = append(xs, m[key])
		}
		return median(xs)
	}
	type line struct {
		key, name string
		ours      float64
	}
	rows := []line{
		{"first", "first step (compiles)", ms[0]["step_time"]},
		{"step", fmt.Sprintf("step, median of %d", len(ms)-1), med("step_time")},
		{"generate", "  generation", med("timing/generate")},
		{"reward", "  reward scoring", med("timing/reward")},
		{"train", "  training (fwd+bwd+AdamW)", med("train_time")},
	}
	var decode, bound float64
	if v.decode {
		if decode, bound, err = decodeAndBound(w, m, v, bw, ""); err != nil {
			return err
		}
		res.DecodeSeconds, res.DecodeBoundSeconds = decode, bound
		rows = append(rows, line{"decode", fmt.Sprintf("decode step, batch %d", v.prompts*v.g), decode})
	}

	fmt.Fprintf(w, "\nseconds (lower is better); ratio = PyTorch / grpokit")
	if v.varlen {
		fmt.Fprintf(w, "; useful tokens/s: completion tokens (EOS included) per second of a step, higher is better, ratio = grpokit / PyTorch")
	}
	fmt.Fprintf(w, "\n\n")
	cols := runs
	if len(cols) == 0 {
		cols = []torchRun{{label: "PyTorch"}}
	}
	cols = append(slices.Clip(cols), trlRuns...)
	tab := table{w: w}
	for _, r := range cols {
		tab.labels = append(tab.labels, r.label)
	}
	tab.header()
	for i, r := range rows {
		tab.row(r.name, fmt.Sprintf("%.3f", r.ours), cells(cols, r.key, "%.3f", r.ours, ratioOf))
		if i > 0 || !slices.ContainsFunc(cols, func(c torchRun) bool { return c.sec["compile"] > 0 }) {
			continue
		}
		tab.row("torch.compile warm-up", "-", cells(cols, "compile", "%.3f", 0, nil))
	}
	steady := med("step_time")
	res.FirstSeconds, res.StepSeconds = ms[0]["step_time"], steady
	res.GenerateSeconds, res.TrainSeconds = med("timing/generate"), med("timing/reward")+med("train_time")
	if best := anchor(runs); best >= 0 {
		res.TorchStepSeconds, res.TorchAnchor = runs[best].sec["step"], runs[best].label
	}
	cpuSteady := median(cpuSeconds[1:])
	tab.row("step, CPU s (all threads)", fmt.Sprintf("%.3f", cpuSteady), cells(cols, "step_cpu", "%.3f", cpuSteady, ratioOf))
	rss := make([]cell, len(cols))
	for i, r := range cols {
		rss[i].ref = "-"
		if t, ok := r.mem["peak_rss_mb"]; ok {
			rss[i].ref = fmt.Sprintf("%.0f", t)
		}
	}
	tab.row("peak RSS, MB", fmt.Sprintf("%.0f", peakRSSMB()), rss)
	if v.varlen {
		rate := median(tokenRates[1:])
		tab.row("useful tokens/s", fmt.Sprintf("%.1f", rate), cells(cols, "tokens_per_s", "%.1f", rate, func(theirs, ours float64) string {
			if theirs <= 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f×", ours/theirs)
		}))
	}
	fmt.Fprintf(w, "\nfirst step / steady step: %.2f× (CPU s: %.2f×)\n", ms[0]["step_time"]/steady, cpuSeconds[0]/cpuSteady)
	if v.varlen {
		fmt.Fprintf(w, "PyTorch keeps every row in the decode batch until the last one ends (a plain HF-style loop); grpokit drops finished rows (model.Generate's default)\n")
		if *compare {
			if err := compareCompaction(w, sched, data[:v.prompts], v); err != nil {
				return err
			}
		}
	}
	if v.decode {
		printDecode(w, v, decode, bound)
	}
	label := "grpostep ratio"
	if *name != "full" {
		label += " (" + *name + ")"
	}
	for _, r := range trlRuns {
		if t := r.sec["step"]; t > 0 {
			fmt.Fprintf(w, "%s vs %s GRPOTrainer: %.2f×\n", label, r.label, t/steady)
			res.TRLStepSeconds, res.TRLLabel = t, r.label
		}
	}
	printRatios(w, label, runs, steady)
	return nil
}

// noise is a reward that ignores the text and returns fixed pseudo-random
// scores, so that advantages are not all zero (the cost of a step does not
// depend on the scores).
func noise() reward.Func {
	var n atomic.Uint64
	return func(_, _, _ string) float64 {
		r := rand.New(rand.NewPCG(n.Add(1), 7))
		return r.Float64()
	}
}

// promptIDs returns example i's prompt: n fixed pseudo-random ids above the
// special ones.
func promptIDs(i, n, vocab int) []int {
	r := rand.New(rand.NewPCG(uint64(i), 11))
	ids := make([]int, n)
	for j := range ids {
		ids[j] = 3 + r.IntN(vocab-3)
	}
	return ids
}

// decodeAndBound times a decode step and measures the memory bandwidth;
// bound is the time to read the weights once at the measured read
// bandwidth (all threads). With profile set, the timed generations are
// CPU-profiled there.
func decodeAndBound(w io.Writer, m *model.Model, v variant, bw bandwidthSpec, profile string) (decode, bound float64, err error) {
	var cpu float64
	if decode, cpu, err = decodeStep(m, v, profile); err != nil {
		return 0, 0, err
	}
	batch := v.prompts * v.g
	fmt.Fprintf(w, "decode step at batch %d: %.1f ms wall, %.1f CPU ms (all threads); its weight products (LM head included) are 2 · %d params · %d rows = %.2f GFLOP\n",
		batch, 1e3*decode, 1e3*cpu, m.NumParams(), batch, 2*float64(m.NumParams())*float64(batch)/1e9)
	weightBytes := float64(m.Compute().Size()) * float64(m.NumParams())
	if bw.gbs > 0 {
		bound = weightBytes / (bw.gbs * 1e9)
		fmt.Fprintf(w, "memory bandwidth (given): %.0f GB/s; reading the %.0f MB of %s weights once: %.3f ms\n", bw.gbs, weightBytes/1e6, m.Compute(), 1e3*bound)
		return decode, bound, nil
	}
	n := 64 << 20
	if bw.small {
		n = 1 << 20
	}
	workers := runtime.GOMAXPROCS(0)
	cp := bandwidth(n)
	read1, readAll := readBandwidth(4*n, 1), readBandwidth(4*n, workers)
	bound = weightBytes / readAll
	fmt.Fprintf(w, "memory bandwidth: read %.1f GB/s on 1 thread, %.1f GB/s on %d; STREAM-like copy %.1f GB/s (read+write, %d threads); reading the %.0f MB of weights once: %.1f ms\n",
		read1/1e9, readAll/1e9, workers, cp/1e9, workers, weightBytes/1e6, 1e3*bound)
	return decode, bound, nil
}

func printDecode(w io.Writer, v variant, decode, bound float64) {
	fmt.Fprintf(w, "decode step at batch %d: %.1f ms = %.0f%% of the memory-bandwidth bound (%.1f ms)\n",
		v.prompts*v.g, 1e3*decode, 100*bound/decode, 1e3*bound)
}

// reportDecode is -decodeonly.
// With profile set it writes a CPU profile of the timed generations (after
// the warm-up) there.
// With opTrace it then traces one generation of newTokens tokens and prints
// its ops per decode step (the prefill's ops included, divided likewise).
func reportDecode(w io.Writer, m *model.Model, v variant, bw bandwidthSpec, profile string, opTrace bool, res *results) error {
	fmt.Fprintf(w, "grpokit decode: %d params, %d prompts × G=%d of %d tokens, %d new tokens; gemm kernels %v, GOMAXPROCS=%d, %s\n",
		m.NumParams(), v.prompts, v.g, v.promptLen, v.newTokens, gemm.Active(), runtime.GOMAXPROCS(0), cpuModel())
	decode, bound, err := decodeAndBound(w, m, v, bw, profile)
	if err != nil {
		return err
	}
	res.DecodeSeconds, res.DecodeBoundSeconds = decode, bound
	printDecode(w, v, decode, bound)
	if opTrace {
		backend.StartOpTrace()
		start := time.Now()
		_, err := m.Generate(context.Background(), decodePrompts(m, v), decodeConfig(v, v.newTokens))
		win := window{start, time.Now()}
		events := backend.StopOpTrace()
		if err != nil {
			return err
		}
		printOpStatsPer(w, events, []window{win}, runtime.GOMAXPROCS(0), "generation", "decode step", v.newTokens, 100*time.Microsecond)
	}
	return nil
}

// decodePrompts are decodeStep's prompts: v.prompts rows of v.promptLen ids.
func decodePrompts(m *model.Model, v variant) [][]int {
	prompts := make([][]int, v.prompts)
	for i := range prompts {
		prompts[i] = promptIDs(1000+i, v.promptLen, m.Config().VocabSize)
	}
	return prompts
}

// decodeConfig samples n forced tokens for each of v.g rows a prompt.
func decodeConfig(v variant, n int) model.GenerateConfig {
	return model.GenerateConfig{MaxNewTokens: n, MinNewTokens: n, NumGenerations: v.g, Sampling: model.Sampling{Temperature: 1}, Seed: 1}
}

// decodeStep returns the median time of one decode step at batch
// prompts·g and the process CPU seconds it took (all threads): Generate
// with newTokens forced tokens minus Generate with 1 (the same prefill),
// divided by newTokens−1 (where that difference is not positive, the
// longer Generate divided by newTokens).
func decodeStep(m *model.Model, v variant, profile string) (wall, cpu float64, err error) {
	prompts := decodePrompts(m, v)
	gen := func(n int) (float64, float64, error) {
		t0, c0 := time.Now(), cpuTime()
		_, err := m.Generate(context.Background(), prompts, decodeConfig(v, n))
		return time.Since(t0).Seconds(), cpuTime() - c0, err
	}
	if _, _, err := gen(v.newTokens); err != nil { // warm-up
		return 0, 0, err
	}
	var prof cpuProfiler
	defer prof.stop()
	if err := prof.start(profile); err != nil {
		return 0, 0, err
	}
	var walls, cpus []float64
	for range 3 {
		short, shortCPU, err := gen(1)
		if err != nil {
			return 0, 0, err
		}
		long, longCPU, err := gen(v.newTokens)
		if err != nil {
			return 0, 0, err
		}
		wall, cpu := (long-short)/float64(v.newTokens-1), (longCPU-shortCPU)/float64(v.newTokens-1)
		if wall <= 0 || cpu <= 0 {
			// The steps are lost in the noise of the two runs (a tiny
			// model on a busy machine): the long run's time per token
			// bounds a step from above.
			wall, cpu = long/float64(v.newTokens), longCPU/float64(v.newTokens)
		}
		walls = append(walls, wall)
		cpus = append(cpus, cpu)
	}
	return median(walls), median(cpus), nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func ratioOf(theirs, ours float64) string {
	if theirs <= 0 || ours <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", theirs/ours)
}

func errOr(err error, ok string) string {
	if err != nil {
		return err.Error()
	}
	return ok
}

func dashes(n int) string { return strings.Repeat("-", n) }

// cpuProfiler writes a CPU profile to a file between start and stop.
type cpuProfiler struct{ f *os.File }

// start starts profiling into path; an empty path profiles nothing.
func (p *cpuProfiler) start(path string) error {
	if path == "" {
		return nil
	}
	var err error
	if p.f, err = os.Create(path); err != nil {
		return err
	}
	return pprof.StartCPUProfile(p.f)
}

// stop ends the profile started last, if any; it may be called again.
func (p *cpuProfiler) stop() {
	if p.f != nil {
		pprof.StopCPUProfile()
		p.f.Close()
		p.f = nil
	}
}
