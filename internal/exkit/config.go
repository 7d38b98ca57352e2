package exkit

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/grpokit/grpokit/gguf"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/strictcfg"
	"github.com/grpokit/grpokit/memplan"
)

// Config holds the settings every example shares. Zero fields mean the
// example's defaults (see each example's defaults function). In a -config
// file (JSON or YAML) the keys are TRL's names where TRL has the setting
// (max_steps, num_generations, learning_rate, beta, temperature, seed,
// output_dir, model_name_or_path, lora_r), else the json tags below; any
// other grpo.Config key (loss_type, scale_rewards, min_p, …) reaches the
// trainer through Trainer. The flags keep short names (-steps, -lr, -out,
// ...).
type Config struct {
	// Model is a Hugging Face model folder (config.json, model.safetensors,
	// tokenizer.json); "" builds the tiny embedded model.
	Model string `json:"model_name_or_path"`
	// Backend names the GoMLX backend ("go", "xla:cpu", "xla:cuda"); ""
	// uses $GOMLX_BACKEND, else the pure-Go backend.
	Backend string `json:"backend"`
	// DType is the compute dtype: "f32" (default) or "bf16" (weights and
	// activations bf16; norms, softmax, loss and the trainable float32
	// masters as transformers + PEFT under torch_dtype=bfloat16).
	DType string `json:"torch_dtype"`
	// Train is "full" (every weight trains) or "lora".
	Train string `json:"train"`
	// LoRARank is the LoRA rank r (alpha is 2r).
	LoRARank int `json:"lora_r"`
	// Quantize is how a LoRA run holds the frozen base (QLoRA): "nf4"
	// (bitsandbytes' load_in_4bit with bnb_4bit_quant_type="nf4"), "int8"
	// (load_in_8bit), or "" to keep the checkpoint's own dtype (a bf16
	// checkpoint stays bf16). Products always run in float32.
	Quantize string `json:"quantize"`
	// MemoryLimit overrides the memory a run may use, which the memory
	// plan printed before step 0 is checked against (a size such as
	// "16GB", or "off" to run whatever the plan says); "" detects it
	// (memplan.BudgetFromEnv: $GRPOKIT_MEMORY_LIMIT, else what is available).
	MemoryLimit string `json:"memory_limit"`
	// GradientCheckpointing recomputes each decoder layer in the backward
	// pass instead of keeping its activations (grpo.Config's; TRL's
	// gradient_checkpointing): less memory, about one more forward pass of
	// time.
	GradientCheckpointing bool `json:"gradient_checkpointing"`
	// Steps is the number of GRPO optimizer steps.
	Steps int `json:"max_steps"`
	// Generations is G, the completions sampled per prompt.
	Generations int `json:"num_generations"`
	// Prompts is the prompts (episodes) per optimizer step (TRL counts
	// completions instead: per_device_train_batch_size = prompts ×
	// num_generations).
	Prompts int `json:"prompts"`
	// LR is the peak learning rate.
	LR float64 `json:"learning_rate"`
	// Beta weights the KL penalty; 0 keeps no reference model.
	Beta float64 `json:"beta"`
	// Temperature is the sampling temperature during training.
	Temperature float64 `json:"temperature"`
	// SFTSteps is the supervised warm-start steps on the task's answers
	// (each example says which models it warm-starts); -1 means none.
	SFTSteps int `json:"sft_steps"`
	// Eval is the number of held-out examples (games) evaluated before and
	// after training.
	Eval int `json:"eval"`
	// Out is the output folder (metrics, plots, checkpoints, tiny model).
	Out string `json:"output_dir"`
	// Seed seeds model init, data and sampling.
	Seed int64 `json:"seed"`
	// Data is the task's data folder or file, where the task has one.
	Data string `json:"data"`
	// Quiet turns off progress lines.
	Quiet bool `json:"quiet"`
	// TimeLimit stops training after this long (a checkpoint is saved and
	// the final evaluation runs); 0 means no limit. JSON: "25m".
	TimeLimit Duration `json:"time_limit"`
	// Resume continues from the newest checkpoint in Out (same settings;
	// Steps may grow). A tiny model then skips its warm start.
	Resume bool `json:"resume"`
	// Overwrite lets a run without -resume replace the run already in Out
	// (its metrics and checkpoints); without it that is an error.
	Overwrite bool `json:"overwrite_output_dir"`
	// Stdout receives the report; nil means os.Stdout (tests set it).
	Stdout io.Writer `json:"-"`
	// Thinking sets the chat template variable enable_thinking (Qwen3's
	// templates think before answering unless it is false; templates that
	// do not use it ignore it). Default false: short answers.
	Thinking bool `json:"enable_thinking"`
	// CPUProfile, if set, names a file that receives a pprof CPU profile
	// of the whole run (`go tool pprof FILE`).
	CPUProfile string `json:"cpuprofile"`
	// MemProfile, if set, names a file that receives a pprof heap profile
	// taken at the run's largest live heap (`go tool pprof FILE`): each
	// time the live heap grows by 2%, a collection is forced and the
	// profile rewritten, which slows the run a little.
	MemProfile string `json:"memprofile"`

	// Trainer takes, in a -config file, every other grpo.Config setting by
	// its TRL name (loss_type, epsilon_high, delta,
	// importance_sampling_level, top_entropy_quantile, scale_rewards,
	// min_p, repetition_penalty, dynamic_sampling, …); GRPO starts from it.
	// The fields above, the example's own keys and what GRPO sets win.
	Trainer
	// trainerSet says Parse filled Trainer from grpo.DefaultConfig.
	trainerSet bool
}

// Trainer is grpo.Config, embedded in Config so that a -config file's
// keys reach it by their TRL names.
type Trainer = grpo.Config

// Output returns where the report goes: Stdout, or os.Stdout.
func (c *Config) Output() io.Writer {
	if c.Stdout == nil {
		return os.Stdout
	}
	return c.Stdout
}

// Progress returns where progress lines go: Output(), or nil with -quiet.
func (c *Config) Progress() io.Writer {
	if c.Quiet {
		return nil
	}
	return c.Output()
}

// GRPO returns the trainer settings every example shares, from c: G
// completions per prompt, Prompts prompts per step, Steps steps, the
// sampling temperature, learning rate, KL weight and seed, checkpoints in
// Out (every grpo.DefaultSaveMinutes minutes and at the end, the newest two
// kept), and a progress line every loggingSteps steps unless Quiet. The example sets the rest (lengths, schedule, task knobs).
func (c *Config) GRPO(loggingSteps int) grpo.Config {
	gc := grpo.DefaultConfig()
	if c.trainerSet {
		gc = c.Trainer
	}
	gc.NumGenerations = c.Generations
	gc.BatchSize = c.Generations * c.Prompts
	gc.MaxSteps = c.Steps
	gc.Temperature = c.Temperature
	gc.LearningRate = c.LR
	gc.Beta = c.Beta
	gc.GradientCheckpointing = c.GradientCheckpointing
	gc.Seed = c.Seed
	gc.OutputDir = c.Out
	gc.SaveSteps = 0
	gc.SaveMinutes = grpo.DefaultSaveMinutes
	gc.SaveTotalLimit = 2
	// With -resume and no checkpoint (a run killed before its first save)
	// the leftovers of that run are replaced; with a checkpoint the trainer
	// is resumed and this does not apply.
	gc.OverwriteOutputDir = c.Overwrite || c.Resume
	gc.LoggingSteps = loggingSteps
	if c.Quiet {
		gc.LoggingSteps = 0
	}
	return gc
}

// Shared returns c itself; through embedding it gives Main the settings
// every example shares.
func (c *Config) Shared() *Config { return c }

// Register binds the flags of cfg in fs, with cfg's current values as
// defaults. Call it with the example's defaults filled in.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Model, "model", c.Model, "Hugging Face model folder (config.json, model.safetensors, tokenizer.json); empty builds the tiny embedded model")
	fs.StringVar(&c.Backend, "backend", c.Backend, "GoMLX backend: go, xla:cpu or xla:cuda (default $GOMLX_BACKEND, else go)")
	fs.StringVar(&c.DType, "dtype", c.DType, "compute dtype: f32 or bf16 (slow on the pure-Go backend; meant for XLA/GPU)")
	fs.StringVar(&c.Train, "train", c.Train, "what trains: full (every weight) or lora")
	fs.IntVar(&c.LoRARank, "lora-rank", c.LoRARank, "LoRA rank r (alpha = 2r) with -train lora")
	fs.StringVar(&c.Quantize, "quantize", c.Quantize, "with -train lora: hold the frozen base as nf4 or int8 (QLoRA: bitsandbytes' load_in_4bit, bnb_4bit_quant_type=nf4 / load_in_8bit); empty keeps the checkpoint's dtype")
	fs.StringVar(&c.MemoryLimit, "memory-limit", c.MemoryLimit, "memory the run may use, checked against the memory plan printed before step 0 (e.g. 16GB; off: do not stop); default detected ($"+memplan.LimitEnv+", MemAvailable, cgroup limit)")
	fs.BoolVar(&c.GradientCheckpointing, "gradient-checkpointing", c.GradientCheckpointing, "recompute each decoder layer in the backward pass: less memory, about one more forward pass of time (TRL's gradient_checkpointing)")
	fs.IntVar(&c.Steps, "steps", c.Steps, "GRPO optimizer steps")
	fs.IntVar(&c.Generations, "generations", c.Generations, "completions sampled per prompt (G)")
	fs.IntVar(&c.Prompts, "prompts", c.Prompts, "prompts per optimizer step")
	fs.Float64Var(&c.LR, "lr", c.LR, "peak learning rate")
	fs.Float64Var(&c.Beta, "beta", c.Beta, "KL weight (0: no reference model)")
	fs.Float64Var(&c.Temperature, "temperature", c.Temperature, "sampling temperature while training")
	fs.IntVar(&c.SFTSteps, "sft-steps", c.SFTSteps, "supervised warm-start steps on the task's answers (-1: none)")
	fs.IntVar(&c.Eval, "eval", c.Eval, "held-out examples evaluated before and after training")
	fs.StringVar(&c.Out, "out", c.Out, "output folder")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "random seed")
	fs.StringVar(&c.Data, "data", c.Data, "task data (file or folder)")
	fs.BoolVar(&c.Quiet, "quiet", c.Quiet, "no progress lines")
	fs.BoolVar(&c.Thinking, "thinking", c.Thinking, "chat templates' enable_thinking (Qwen3 thinks before answering); off by default")
	fs.Var(&c.TimeLimit, "time", "stop training after this long, then evaluate (0: no limit)")
	fs.BoolVar(&c.Resume, "resume", c.Resume, "continue from the newest checkpoint in -out (same settings; -steps may grow)")
	fs.BoolVar(&c.Overwrite, "overwrite", c.Overwrite, "replace the run already in -out (its metrics and checkpoints) instead of refusing to start")
	fs.StringVar(&c.CPUProfile, "cpuprofile", c.CPUProfile, "write a pprof CPU profile of the run to this file")
	fs.StringVar(&c.MemProfile, "memprofile", c.MemProfile, "write a pprof heap profile taken at the run's largest live heap to this file")
}

// Parse parses args into cfg (which holds the defaults): flags, then, when
// -config names a file (JSON, or YAML for *.yaml/*.yml), that file's
// settings, then again the flags given explicitly, so that a flag beats
// the file and the file beats defaults. An unknown key in the file is an
// error naming the nearest known key. extra, if not nil, registers
// task-specific flags on the same FlagSet.
func Parse(name string, cfg any, common *Config, extra func(fs *flag.FlagSet), args []string) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	configFile := fs.String("config", "", "JSON or YAML file of settings (TRL's names: max_steps, learning_rate, …); flags given on the command line win")
	common.Register(fs)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", name, fs.Args())
	}
	if *configFile == "" {
		return nil
	}
	common.Trainer, common.trainerSet = grpo.DefaultConfig(), true
	if err := strictcfg.DecodeFile(*configFile, cfg); err != nil {
		return fmt.Errorf("%s: config %w", name, err)
	}
	common.Model, common.Out = strictcfg.ExpandHome(common.Model), strictcfg.ExpandHome(common.Out)
	// Parsing args again re-applies the flags given on the command line,
	// so that they win over the file.
	return fs.Parse(args)
}

// Validate checks the shared fields.
func (c *Config) Validate(name string) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(name+": "+format, args...)) }
	switch c.Train {
	case "full", "lora":
	default:
		bad("-train %q: want full or lora", c.Train)
	}
	switch c.Quantize {
	case "":
	case "nf4", "int8":
		if c.Train != "lora" {
			bad("-quantize %s: only with -train lora (full fine-tuning trains float32 weights)", c.Quantize)
		}
	default:
		bad("-quantize %q: want nf4, int8 or empty", c.Quantize)
	}
	if c.Train == "lora" && c.LoRARank < 1 {
		bad("-lora-rank %d: want ≥ 1", c.LoRARank)
	}
	if c.Steps < 0 {
		bad("-steps %d: want ≥ 0", c.Steps)
	}
	if c.Generations < 2 {
		bad("-generations %d: want ≥ 2", c.Generations)
	}
	if c.Prompts < 1 {
		bad("-prompts %d: want ≥ 1", c.Prompts)
	}
	if !(c.LR >= 0) {
		bad("-lr %g: want ≥ 0", c.LR)
	}
	if !(c.Temperature > 0) {
		bad("-temperature %g: want > 0", c.Temperature)
	}
	if c.Eval < 1 {
		bad("-eval %d: want ≥ 1", c.Eval)
	}
	if c.Out == "" {
		bad("-out is empty")
	}
	if c.Model != "" {
		if st, err := os.Stat(c.Model); err != nil || (!st.IsDir() && !gguf.IsFile(c.Model)) {
			bad("-model %s: not a folder or a GGUF file", c.Model)
		}
	}
	return errors.Join(errs...)
}
