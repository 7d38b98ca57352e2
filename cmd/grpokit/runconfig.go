package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/grpokit/grpokit/agent"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/gguf"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/strictcfg"
	"github.com/grpokit/grpokit/internal/trlkeys"
	"github.com/grpokit/grpokit/model"
)

// runConfig is train's (and eval's) config file: grpo.Config's settings
// under TRL's names at the top level, plus the sections below.
type runConfig struct {
	grpo.Config
	// Model is what trains: a Hugging Face folder or a tiny model.
	Model modelSection `json:"model"`
	// Dataset is where the prompts come from.
	Dataset datasetSection `json:"dataset"`
	// Rewards are the reward functions, from the built-ins.
	Rewards []rewardSpec `json:"rewards"`
	// Constraint restricts generation (training, eval and generate).
	Constraint *constraintSection `json:"constraint"`
	// SFT is an optional supervised warm start on the answers.
	SFT *sftSection `json:"sft"`
	// Eval is a greedy evaluation before and after training.
	Eval evalSection `json:"eval"`
	// TimeLimit stops training after this long ("25m"); a checkpoint is saved.
	TimeLimit duration `json:"time_limit"`
	// Resume continues from the newest checkpoint in output_dir.
	Resume bool `json:"resume"`
	// ChatTemplateKwargs are extra variables of the chat template (TRL:
	// chat_template_kwargs), e.g. {enable_thinking: false} for Qwen3.
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs"`
	// TemplatePlainPrompts renders a plain {"prompt": "..."} row through
	// the chat template as one user message (with chat_template_kwargs).
	// By default, as TRL does with its "standard" dataset format, a plain
	// prompt reaches the model untemplated and chat_template_kwargs does
	// not apply to it. A grpokit extension, not a TRL key.
	TemplatePlainPrompts bool `json:"template_plain_prompts"`
	// Backend is the GoMLX backend ("go", "xla:cpu", ...); "" uses
	// $GOMLX_BACKEND, else the pure-Go one.
	Backend string `json:"backend"`
	// Tools are built-in tools by name (calculator, dates) the model may
	// call: every completion becomes a tool-calling trajectory, bounded by
	// max_tool_calling_iterations and max_completion_length.
	Tools []string `json:"tools"`
	// ToolCallFormat is how the model writes calls: hermes (Qwen2.5,
	// Qwen3), llama3 (Llama 3.1, 3.2), gemma or plain (a tiny model); ""
	// detects it from the chat template (plain for a tiny model).
	ToolCallFormat string `json:"tool_call_format"`

	// BF16 computes in bfloat16 (TRL: bf16) when model.dtype is not given.
	// Unset, it is true on XLA, as TRL's default, and false on the
	// pure-Go backend, where bfloat16 computes two to three times slower
	// than float32 (every bf16 op computes in f32 and rounds); the run's
	// start-up line says which was chosen and why. model.dtype, when given,
	// decides instead (and must agree with bf16 when both are given).
	BF16 *bool `json:"bf16"`

	// notes say which of TRL's keys in the file have no effect here.
	notes []string
	// evalLimit, when > 0, is the eval rows grpokit eval scores (its -n)
	// instead of eval.n; eval.n still decides which rows of dataset.path
	// training never sees.
	evalLimit int
	// adopt lets -resume continue a checkpoint of another run (-adopt).
	adopt bool
	// dtypeNote is the start-up line's reason for a compute dtype that
	// neither bf16 nor model.dtype named.
	dtypeNote string
}

// resolveDType fills model.dtype from bf16, or when neither is given from
// the backend: bfloat16 (TRL's bf16 default) on XLA, float32 on the
// pure-Go backend.
func (c *runConfig) resolveDType() error {
	given := c.Model.dtype()
	if c.BF16 != nil {
		want := map[bool]string{true: "bfloat16", false: "float32"}[*c.BF16]
		if given == "" {
			c.Model.DType = want
			return nil
		}
		if !strings.EqualFold(given, "auto") {
			if dt, err := model.ParseCompute(given); err == nil && (dt == dtypes.BFloat16) != *c.BF16 {
				return fmt.Errorf("grpokit: config: bf16: %v and model.dtype %q disagree (give one)", *c.BF16, given)
			}
		}
		return nil
	}
	if given != "" {
		return nil
	}
	if goBackend(c.Backend) {
		c.Model.DType = "float32"
		c.dtypeNote = "compute float32: TRL's default is bf16, but the pure-Go backend computes bfloat16 2–3× slower " +
			"than float32 (set bf16: true or model.dtype: bfloat16 to use it anyway)"
	} else {
		c.Model.DType = "bfloat16"
		c.dtypeNote = "compute bfloat16, TRL's bf16 default (float32 master weights and optimizer state; " +
			"set bf16: false or model.dtype: float32 for float32)"
	}
	return nil
}

// modelSection names the model: Path, or Tiny to build one from scratch.
type modelSection struct {
	// Path is a Hugging Face model folder (TRL: model_name_or_path).
	Path string `json:"model_name_or_path"`
	// Tiny builds a small Llama-shaped model and tokenizer from scratch.
	Tiny *tinySection `json:"tiny"`
	// UsePEFT trains a LoRA adapter instead of every weight (TRL: use_peft).
	UsePEFT bool `json:"use_peft"`
	// LoRA settings, with PEFT/TRL names; lora_alpha 0 means 2 × lora_r.
	LoraR             int      `json:"lora_r"`
	LoraAlpha         float64  `json:"lora_alpha"`
	LoraDropout       float64  `json:"lora_dropout"`
	LoraTargetModules []string `json:"lora_target_modules"`
	// UseRSLoRA scales B·A by lora_alpha/sqrt(lora_r) (TRL: use_rslora).
	UseRSLoRA bool `json:"use_rslora"`
	// DType is the dtype the model computes in (TRL: dtype, formerly
	// torch_dtype): "float32", "bfloat16" (as transformers under
	// torch_dtype=bfloat16), or "auto" for the checkpoint's own
	// torch_dtype. float16 is refused. Not given, bf16 decides (by default
	// bfloat16 on XLA, float32 on the pure-Go backend).
	DType      string `json:"dtype"`
	TorchDType string `json:"torch_dtype"` // TRL's older name for dtype
	// QLoRA, with TRL's names: the frozen base held 4-bit (load_in_4bit;
	// bnb_4bit_quant_type "nf4"; use_bnb_nested_quant quantizes the
	// scales again) or 8-bit (load_in_8bit). Needs use_peft, as in PEFT.
	// For a GGUF file, load_in_4bit keeps the file's own Q4_0, Q4_1, Q8_0
	// and Q4_K blocks (bnb_4bit_quant_type "gguf", its default there;
	// "nf4" quantizes the dequantized weights to NF4 instead).
	// Without them a LoRA run holds the base as stored (a bf16 checkpoint
	// stays bf16), and full fine-tuning holds float32 masters.
	LoadIn4bit        bool   `json:"load_in_4bit"`
	LoadIn8bit        bool   `json:"load_in_8bit"`
	BnB4bitQuantType  string `json:"bnb_4bit_quant_type"`
	UseBnBNestedQuant bool   `json:"use_bnb_nested_quant"`
}

// quantType is load_in_4bit's format: bnb_4bit_quant_type in lower case,
// by default "gguf" for a GGUF file (its own blocks) and "nf4" otherwise.
func (m modelSection) quantType() string {
	if q := strings.ToLower(m.BnB4bitQuantType); q != "" {
		return q
	}
	if m.Path != "" && gguf.IsFile(m.Path) {
		return "gguf"
	}
	return "nf4"
}

// dtype is the compute dtype asked for under either of TRL's names.
func (m modelSection) dtype() string { return cmp.Or(m.DType, m.TorchDType) }

// options are the model.Options the section asks for; checkpointDType is
// the checkpoint's own torch_dtype, which "auto" means.
func (m modelSection) options(checkpointDType string) (*model.Options, error) {
	d := m.dtype()
	if strings.EqualFold(d, "auto") {
		d = checkpointDType
	}
	compute, err := model.ParseCompute(d)
	if err != nil {
		return nil, fmt.Errorf("grpokit: config: model.dtype: %w", err)
	}
	opts := &model.Options{Compute: compute}
	if m.UsePEFT {
		// The base is frozen: keep it as stored, or quantize it (QLoRA).
		opts.Storage = model.StorageAsStored
		switch {
		case m.LoadIn4bit && m.quantType() == "gguf":
			opts.Storage = model.StorageGGUF
		case m.LoadIn4bit:
			opts.Storage, opts.DoubleQuant = model.StorageNF4, m.UseBnBNestedQuant
		case m.LoadIn8bit:
			opts.Storage = model.StorageInt8
		}
	}
	return opts, nil
}

// tinySection is model.TinyConfig plus the tokenizer's words.
type tinySection struct {
	Hidden       int `json:"hidden_size"`
	Layers       int `json:"num_hidden_layers"`
	Heads        int `json:"num_attention_heads"`
	Intermediate int `json:"intermediate_size"`
	MaxPositions int `json:"max_position_embeddings"`
	// Words get a token each; WordsFromDataset adds the most frequent
	// words of the dataset's prompts and answers (this many).
	Words            []string `json:"words"`
	WordsFromDataset int      `json:"words_from_dataset"`
}

// config is the model shape the section asks for.
func (t *tinySection) config() model.TinyConfig {
	return model.TinyConfig{Hidden: t.Hidden, Layers: t.Layers, Heads: t.Heads, Intermediate: t.Intermediate, MaxPositions: t.MaxPositions}
}

// datasetSection is a dataset file, or a built-in task's data.
type datasetSection struct {
	// Path is a dataset as the Hub serves it (grpo.LoadDataset): a
	// .parquet, .jsonl or .json file (or .jsonl.gz, .json.gz), or a
	// pattern for a split's shards such as "gsm8k/main/train-*.parquet";
	// each row a {"prompt", "answer"} or {"messages"}.
	Path string `json:"path"`
	// EvalPath is the dataset for eval, in the same forms; without it,
	// eval.n rows of Path picked with the seed are held out from training.
	EvalPath string `json:"eval_path"`
	// Builtin names a task's data instead: "gsm8k" (shipped train/test),
	// "poker" (generated hands) or "wordle" (generated positions, one move).
	Builtin string `json:"builtin"`
	// Size is the examples a generated built-in makes; default 10000.
	Size int `json:"size"`
	// Column names of Path's rows (TRL's by default).
	dataset.JSONLFields
	// SystemPrompt, if set, turns each prompt into a chat: this system
	// message, then the prompt as the user's.
	SystemPrompt string `json:"system_prompt"`
}

// constraintSection limits completions to one of Choices, then EOS.
type constraintSection struct {
	Choices []string `json:"choices"`
}

// sftSection is a supervised warm start on the dataset's answers.
type sftSection struct {
	// Target is the completion learned, with {answer} replaced by the
	// example's answer; default "{answer}".
	Target       string  `json:"target"`
	Steps        int     `json:"max_steps"`
	LearningRate float64 `json:"learning_rate"`
	BatchSize    int     `json:"per_device_train_batch_size"`
}

// evalSection is the greedy evaluation run before and after training.
type evalSection struct {
	// N is the examples evaluated; 0 means none.
	N int `json:"n"`
	// MaxCompletionLength defaults to the training one.
	MaxCompletionLength int `json:"max_completion_length"`
}

// duration reads "25m" in JSON and YAML.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`time_limit: want a duration such as "25m"`)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("time_limit: %q is not a duration such as 25m", s)
	}
	*d = duration(v)
	return nil
}

func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// defaultRunConfig is what a config file's settings replace.
func defaultRunConfig() runConfig {
	c := runConfig{Config: grpo.DefaultConfig()}
	c.OutputDir = "runs/grpokit"
	// A killed run loses minutes, not the run: save every few minutes
	// (save_minutes and save_total_limit in the file replace these).
	c.SaveMinutes = grpo.DefaultSaveMinutes
	c.SaveTotalLimit = 2
	c.Model.LoraR = 16 // TRL's ModelConfig default (lora_alpha 0 then means TRL's 32)
	return c
}

// loadRunConfig reads path (YAML or JSON) over the defaults and checks it.
func loadRunConfig(path string) (runConfig, error) {
	c := defaultRunConfig()
	if path == "" {
		return c, usageError{errors.New("grpokit: -config is required")}
	}
	// TRL's keys without a grpokit setting are accepted where they change
	// nothing (with a note when set) and explained where they would.
	trl := func(key string, v any) (bool, error) {
		known, note, err := trlkeys.Check(key, v)
		if note != "" {
			c.notes = append(c.notes, note)
		}
		return known, err
	}
	if err := strictcfg.DecodeFileForeign(path, &c, trl); err != nil {
		return c, fmt.Errorf("grpokit: config %w", err)
	}
	// A shell expands ~ in flags, not in a config file's values.
	for _, p := range []*string{&c.Model.Path, &c.Dataset.Path, &c.Dataset.EvalPath, &c.OutputDir} {
		*p = strictcfg.ExpandHome(*p)
	}
	// generation_kwargs override the sampling settings before anything
	// (the prompt-length check, the memory plan) reads them.
	var err error
	if c.Config, err = c.Config.ApplyGenerationKwargs(); err != nil {
		return c, err
	}
	return c, c.resolveDType()
}

// validate checks the sections and the training settings, before any
// model is loaded; a training setting's error names its key as the config
// file spells it.
func (c *runConfig) validate() error {
	var errs []error
	if err := c.Config.Validate(); err != nil {
		errs = append(errs, configKeyErrors(err)...)
	}
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("grpokit: config: "+format, args...)) }
	if (c.Model.Path == "") == (c.Model.Tiny == nil) {
		bad("model: give exactly one of model_name_or_path and tiny")
	}
	if c.Model.UsePEFT && c.Model.LoraR < 1 {
		bad("model.lora_r %d: want ≥ 1", c.Model.LoraR)
	}
	m := c.Model
	if m.DType != "" && m.TorchDType != "" && !strings.EqualFold(m.DType, m.TorchDType) {
		bad("model: dtype %q and torch_dtype %q differ (torch_dtype is the older name of dtype: give one)", m.DType, m.TorchDType)
	}
	if d := m.dtype(); !strings.EqualFold(d, "auto") {
		if _, err := model.ParseCompute(d); err != nil {
			bad("model.dtype: %v", err)
		}
	}
	switch {
	case m.LoadIn4bit && m.LoadIn8bit:
		bad("model: load_in_4bit and load_in_8bit: give one")
	case (m.LoadIn4bit || m.LoadIn8bit) && !m.UsePEFT:
		bad("model: load_in_4bit/load_in_8bit quantize a frozen base, which trains only as a LoRA adapter: set use_peft: true")
	case m.UseBnBNestedQuant && !m.LoadIn4bit:
		bad("model: use_bnb_nested_quant quantizes the 4-bit base's scales: it needs load_in_4bit: true")
	}
	switch q := m.quantType(); {
	case q != "nf4" && q != "gguf":
		bad("model.bnb_4bit_quant_type %q: want nf4, or gguf for a GGUF file's own blocks", m.BnB4bitQuantType)
	case q == "gguf" && m.BnB4bitQuantType != "" && !gguf.IsFile(m.Path):
		bad("model.bnb_4bit_quant_type gguf keeps a GGUF file's blocks: model_name_or_path %q is not a GGUF file", m.Path)
	case q == "gguf" && m.LoadIn4bit && m.UseBnBNestedQuant:
		bad("model: use_bnb_nested_quant quantizes NF4's scales; a GGUF file's blocks are kept as they are (set bnb_4bit_quant_type: nf4 to quantize to NF4)")
	}
	for _, name := range c.Tools {
		if _, err := agent.Builtin(name); err != nil {
			bad("tools: %v", err)
		}
	}
	if _, err := toolFormat(c.ToolCallFormat); err != nil {
		bad("tool_call_format: %v", err)
	}
	if len(c.Tools) > 0 && c.EvalStrategy == grpo.EvalByStep {
		bad("tools: eval_strategy steps evaluates single turns without tools; use eval_strategy no with tools")
	}
	if (c.Dataset.Path == "") == (c.Dataset.Builtin == "") {
		bad("dataset: give exactly one of path and builtin")
	}
	switch c.Dataset.Builtin {
	case "", "gsm8k", "poker", "wordle":
	default:
		bad("dataset.builtin %q: want gsm8k, poker or wordle", c.Dataset.Builtin)
	}
	if len(c.Rewards) == 0 {
		bad("rewards: none given")
	}
	if c.Constraint != nil && len(c.Constraint.Choices) == 0 {
		bad("constraint.choices: empty")
	}
	if c.Eval.N < 0 {
		bad("eval.n %d: want ≥ 0", c.Eval.N)
	}
	if c.EvalStrategy == grpo.EvalByStep && c.Dataset.Path != "" && c.Dataset.EvalPath == "" && c.Eval.N == 0 {
		bad("eval_strategy steps: no held-out rows to evaluate: set eval.n (that many rows of dataset.path are held out from training) or dataset.eval_path")
	}
	return errors.Join(errs...)
}

// configKeyErrors returns the errors joined in err with each
// *grpo.FieldError said with the config file's key (max_steps, not
// MaxSteps).
func configKeyErrors(err error) []error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	t := reflect.TypeOf(grpo.Config{})
	for i, e := range errs {
		var fe *grpo.FieldError
		if !errors.As(e, &fe) {
			continue
		}
		key := fe.Field
		if f, ok := t.FieldByName(fe.Field); ok {
			if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "" && tag != "-" {
				key = tag
			}
		}
		errs[i] = &keyError{key: key, fe: fe}
	}
	return errs
}

// keyError is a *grpo.FieldError said with the config file's key.
type keyError struct {
	key string
	fe  *grpo.FieldError
}

func (e *keyError) Error() string {
	return fmt.Sprintf("grpokit: config: %s = %v: %s", e.key, e.fe.Value, e.fe.Reason)
}
func (e *keyError) Unwrap() error { return e.fe }

// toolFormat is the agent.Format named name; nil for "" (detect).
func toolFormat(name string) (agent.Format, error) {
	switch strings.ToLower(name) {
	case "":
		return nil, nil
	case "hermes":
		return agent.Hermes{}, nil
	case "llama3":
		return agent.Llama3{}, nil
	case "gemma":
		return agent.Gemma{}, nil
	case "plain":
		return agent.Plain{}, nil
	}
	return nil, fmt.Errorf("%q: want hermes, llama3, gemma or plain (or leave it out to detect it from the chat template)", name)
}
