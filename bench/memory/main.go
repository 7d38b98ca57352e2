// Command memory measures a GRPO run's peak resident memory and speed at
// a real model's shapes, beside the memory plan grpo.PlanMemory prints
// before step 0. It writes a Hugging Face folder with random weights from
// a real config.json (model.WriteRandomHF, bf16, tensor by tensor; kept in
// -dir for the next run), then runs the workload in a child process and
// reports the child's peak RSS (wait4's ru_maxrss) and seconds per step:
//
//	go run ./bench/memory -config model/testdata/configs/Qwen2.5-0.5B-Instruct.json -quantize nf4
//
// Workloads (-workload):
//
//   - gsm8k (default): examples/gsm8k's step, -train lora -steps 2
//     -generations 4 -prompts 2 -max-completion 64: LoRA r=8 on q_proj and
//     v_proj, 2 prompts of -prompt-tokens tokens (160, about a GSM8K
//     question in its chat template) × 4 completions of 64 tokens (forced:
//     random weights rarely stop), beta 0, AdamW;
//   - reference: the poker reference's step (bench/grpostep -variant
//     full): 4 prompts × 4 completions, 80 prompt + 6 completion tokens,
//     full fine-tuning, AdamW.
//
// The prompts are random token ids (no tokenizer needed). The first step
// compiles the graphs; s/step is the median of the later steps (the only
// one with -steps 1), reported beside the first step's and beside the
// median CPU seconds of a later step (the child's user + system time
// during the step: on a shared machine it is steadier than wall time). CPU
// s is the child's whole user + system time, loading and compilation
// included. -dir may name a folder written otherwise (bench/randomhf
// -dtype f32, for an f32 base); the plan is then the child's, from the
// weights it loaded.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
)

// childEnv marks the child process that runs the workload.
const childEnv = "GRPOKIT_BENCH_MEMORY_CHILD"

func main() {
	var err error
	if os.Getenv(childEnv) != "" {
		err = child(os.Args[1:], os.Stdout)
	} else {
		err = run(os.Args[1:], os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "memory:", err)
		os.Exit(1)
	}
}

// options are the flags, shared by parent and child.
type options struct {
	config, dir, workload, quantize, train, result string
	steps, generations, prompts, promptTokens      int
	maxCompletion, loraRank                        int
	checkpointing, prepare                         bool
	heapProfile, cpuProfile                        string
}

func parse(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("memory", flag.ContinueOnError)
	fs.StringVar(&o.config, "config", "", "a real config.json (required), e.g. model/testdata/configs/Qwen2.5-0.5B-Instruct.json")
	fs.StringVar(&o.dir, "dir", "", "model folder to write (once) and load; default /tmp/grpokit-memory/<config name>")
	fs.StringVar(&o.workload, "workload", "gsm8k", "gsm8k (LoRA step of examples/gsm8k) or reference (SmolLM2 poker reference step, full fine-tuning)")
	fs.StringVar(&o.train, "train", "", "override the workload's training: lora or full")
	fs.StringVar(&o.quantize, "quantize", "", "with LoRA: frozen base nf4 or int8 (default: bf16 as stored)")
	fs.IntVar(&o.steps, "steps", 0, "optimizer steps (default: the workload's)")
	fs.IntVar(&o.generations, "generations", 0, "completions per prompt (default: the workload's)")
	fs.IntVar(&o.prompts, "prompts", 0, "prompts per step (default: the workload's)")
	fs.IntVar(&o.promptTokens, "prompt-tokens", 0, "tokens per prompt (default: the workload's)")
	fs.IntVar(&o.maxCompletion, "max-completion", 0, "tokens per completion, forced (default: the workload's)")
	fs.IntVar(&o.loraRank, "lora-rank", 8, "LoRA rank r (alpha 2r)")
	fs.BoolVar(&o.checkpointing, "gradient-checkpointing", true, "gradient_checkpointing (per-layer recomputation; TRL's default, on)")
	fs.BoolVar(&o.prepare, "prepare", false, "only write the model folder (no workload)")
	fs.StringVar(&o.result, "result", "", "(child) file for the measured seconds per step")
	fs.StringVar(&o.heapProfile, "heap-profile", "", "write the Go heap profile (pprof) taken when the live heap was largest to this file")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a pprof CPU profile of the steps after the first to this file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.config == "" {
		return nil, errors.New("-config is required")
	}
	def := map[string]options{
		"gsm8k":     {train: "lora", steps: 2, generations: 4, prompts: 2, promptTokens: 160, maxCompletion: 64},
		"reference": {train: "full", steps: 2, generations: 4, prompts: 4, promptTokens: 80, maxCompletion: 6},
	}
	d, ok := def[o.workload]
	if !ok {
		return nil, fmt.Errorf("-workload %q: want gsm8k or reference", o.workload)
	}
	set := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	set(&o.steps, d.steps)
	set(&o.generations, d.generations)
	set(&o.prompts, d.prompts)
	set(&o.promptTokens, d.promptTokens)
	set(&o.maxCompletion, d.maxCompletion)
	if o.train == "" {
		o.train = d.train
	}
	switch {
	case o.train != "lora" && o.train != "full":
		return nil, fmt.Errorf("-train %q: want lora or full", o.train)
	case o.quantize != "" && o.quantize != "nf4" && o.quantize != "int8":
		return nil, fmt.Errorf("-quantize %q: want nf4, int8 or empty", o.quantize)
	case o.quantize != "" && o.train != "lora":
		return nil, errors.New("-quantize needs LoRA (full fine-tuning trains float32 weights)")
	}
	if o.dir == "" {
		o.dir = filepath.Join(os.TempDir(), "grpokit-memory", strings.TrimSuffix(filepath.Base(o.config), ".json"))
	}
	return o, nil
}

// storage is how the model is loaded.
func (o *options) storage() model.Storage {
	switch {
	case o.train == "full":
		return model.StorageF32
	case o.quantize != "":
		return model.Storage(o.quantize)
	}
	return model.StorageAsStored
}

// trainConfig is the workload's trainer settings (gsm8k's: examples'
// shared settings, max_prompt_length 256, constant learning rate).
func (o *options) trainConfig() grpo.Config {
	cfg := grpo.DefaultConfig()
	cfg.NumGenerations = o.generations
	cfg.BatchSize = o.generations * o.prompts
	cfg.MaxSteps = o.steps
	cfg.MaxPromptLength = max(256, o.promptTokens)
	cfg.MaxCompletionLength, cfg.MinCompletionLength = o.maxCompletion, o.maxCompletion
	cfg.LearningRate = 2e-4
	cfg.LRSchedulerType = grpo.ScheduleConstant
	cfg.ShuffleDataset = false
	cfg.LoggingSteps = 1
	cfg.GradientCheckpointing = o.checkpointing
	return cfg
}

// run is the parent: write the folder, print the plan, run the child and
// report its peak RSS and s/step.
func run(args []string, w io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	cfg, err := model.ReadConfig(o.config)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(o.dir, "model.safetensors")); err != nil {
		start := time.Now()
		if err := model.WriteRandomHF(o.dir, cfg, 1, "bf16"); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s (random bf16 weights, %d parameters) in %s\n", o.dir, cfg.NumParams(), time.Since(start).Round(time.Second))
	}
	if o.prepare {
		return nil
	}
	// The folder's matrices are bf16 (WriteRandomHF), whatever its
	// config.json's torch_dtype says.
	req := memplan.Request{Model: cfg, Train: o.trainConfig().MemorySettings(), Storage: o.storage(), PromptTokens: o.promptTokens, FileDType: "BF16"}
	if o.train == "lora" {
		req.LoRARank = o.loraRank
	}
	plan, err := memplan.Estimate(req)
	if err != nil {
		return err
	}
	res, err := os.CreateTemp("", "grpokit-memory-*.json")
	if err != nil {
		return err
	}
	res.Close()
	defer os.Remove(res.Name())
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, append(append([]string{}, args...), "-dir", o.dir, "-result", res.Name())...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdout, cmd.Stderr = w, w
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	peak := childPeakRSS(cmd.ProcessState)
	if err != nil {
		return fmt.Errorf("workload (peak RSS %s before it failed): %w", memplan.FormatBytes(peak), err)
	}
	var r result
	b, err := os.ReadFile(res.Name())
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		return fmt.Errorf("reading the child's result: %w", err)
	}
	what := o.train
	if o.train == "lora" {
		what = "LoRA " + string(o.storage())
		if o.storage() == model.StorageAsStored {
			what = "LoRA bf16"
		}
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if r.Plan > 0 {
		plan.Peak = r.Plan // the child's plan, from the weights it loaded
	}
	fmt.Fprintf(w, "\n| workload | plan (estimate) | peak RSS | estimate / peak | s/step | first step s | wall | CPU s | CPU s/step |\n|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(w, "| %s %s, %s, %d steps | %s | %s | %.2f | %.1f | %.1f | %s | %.0f | %.1f |\n",
		strings.TrimSuffix(filepath.Base(o.config), ".json"), o.workload, what, o.steps,
		memplan.FormatBytes(plan.Peak), memplan.FormatBytes(peak), float64(plan.Peak)/float64(max(peak, 1)),
		r.SecondsPerStep, r.FirstStep, wall.Round(time.Second), cpu.Seconds(), r.CPUPerStep)
	fmt.Fprintf(w, "steps (wall s): %.1f; CPU s: %.1f\n", r.Steps, r.StepCPU)
	return nil
}

// result is what the child reports.
type result struct {
	SecondsPerStep float64   `json:"seconds_per_step"` // median after the first
	FirstStep      float64   `json:"first_step"`
	CPUPerStep     float64   `json:"cpu_per_step"` // median after the first
	LoadSeconds    float64   `json:"load_seconds"`
	Steps          []float64 `json:"steps"`    // each step's wall seconds
	StepCPU        []float64 `json:"step_cpu"` // each step's CPU seconds
	Plan           int64     `json:"plan"`     // the trainer's planned peak
}

// child loads the folder and runs the workload; the trainer prints the
// memory plan before step 0.
func child(args []string, w io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	if o.heapProfile != "" {
		stop := watchHeap(o.heapProfile, w)
		defer stop()
	}
	start := time.Now()
	m, err := model.Load(o.dir, &model.Options{Storage: o.storage()})
	if err != nil {
		return err
	}
	load := time.Since(start).Seconds()
	fmt.Fprintf(w, "loaded %s (%s) in %.1f s\n", o.dir, o.storage(), load)
	var adapter *lora.Adapter
	if o.train == "lora" {
		if adapter, err = lora.Attach(m, lora.Config{R: o.loraRank, Alpha: float64(2 * o.loraRank), Seed: 1, Quantize: o.quantize}); err != nil {
			return err
		}
	}
	policy, err := grpo.NewLMPolicy(m, adapter, nil, nil)
	if err != nil {
		return err
	}
	cfg := o.trainConfig()
	cfg.OutputDir = "" // nothing saved
	// Random rewards: every group has a spread, so every step trains.
	var n atomic.Uint64
	tr, err := grpo.NewTrainer(policy, cfg, reward.Named{Name: "noise", Weight: 1, Scorer: reward.Func(func(_, _, _ string) float64 {
		return rand.New(rand.NewPCG(n.Add(1), 7)).Float64()
	})})
	if err != nil {
		return err
	}
	tr.Progress = w
	// As the grpokit command runs: $GRPOKIT_MEMORY_LIMIT, and Go's memory
	// limit set to the plan.
	budget, err := memplan.BudgetFromEnv()
	if err != nil {
		return err
	}
	tr.Memory, tr.GCLimit = &budget, true
	r := result{LoadSeconds: load}
	if plan, err := memplan.Estimate(policy.MemoryRequest(cfg, o.promptTokens)); err == nil {
		r.Plan = plan.Peak
	}
	lastCPU := processCPU()
	var stopProfile func() error
	defer func() {
		if stopProfile != nil {
			stopProfile()
		}
	}()
	tr.OnStep = func(m grpo.Metrics) {
		now := processCPU()
		r.Steps = append(r.Steps, m["step_time"])
		r.StepCPU = append(r.StepCPU, (now - lastCPU).Seconds())
		if o.cpuProfile != "" && len(r.Steps) == 1 {
			if stopProfile, err = startCPUProfile(o.cpuProfile); err != nil {
				fmt.Fprintln(w, "memory: cpuprofile:", err)
			}
		}
		lastCPU = processCPU() // the profile's start is not the next step's
	}
	data := make(dataset.SliceDataset, o.prompts*o.steps)
	vocab := m.Config().VocabSize
	for i := range data {
		r := rand.New(rand.NewPCG(uint64(i), 11))
		ids := make([]int, o.promptTokens)
		for j := range ids {
			ids[j] = 3 + r.IntN(min(vocab, 32000)-3)
		}
		data[i] = dataset.Example{PromptIDs: ids}
	}
	if err := tr.Train(context.Background(), data); err != nil {
		return err
	}
	if stopProfile != nil {
		if err := stopProfile(); err != nil {
			return err
		}
		stopProfile = nil
	}
	if len(r.Steps) > 0 {
		r.FirstStep = r.Steps[0]
		later := min(1, len(r.Steps)-1)
		r.SecondsPerStep, r.CPUPerStep = median(r.Steps[later:]), median(r.StepCPU[later:])
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(o.result, b, 0o644)
}

// median returns the median of xs (the mean of the middle two for an even
// count).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// startCPUProfile starts a pprof CPU profile into path; stop ends and
// writes it.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
