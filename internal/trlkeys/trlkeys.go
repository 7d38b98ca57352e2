// Package trlkeys answers for the keys of a TRL GRPO config that grpokit
// has no setting for: GRPOConfig's own, those of the transformers
// TrainingArguments it extends, and TRL's ModelConfig and ScriptArguments
// (the other parts of a `trl grpo --config` file). A TRL user's config
// then gets one clear answer per key instead of "unknown key (did you mean
// ...)". A key that changes nothing here (logging, Hub, device and
// distributed plumbing, an engine grpokit does not use, a feature left off)
// is accepted, with a note when its value is not TRL's default; a value
// that asks for what grpokit does not do is an error that says so and
// names grpokit's way, where there is one.
//
// The keys, their types and defaults are not typed here: they are read
// from testdata/trl-grpo-config.tsv, trl-model-config.tsv and
// peft-lora-config.tsv, which internal/trlref/keys.py writes by
// introspecting the installed TRL 1.16.0 (GRPOConfig with transformers
// 5.24.0's TrainingArguments, and ModelConfig) and peft 0.21.2
// (LoraConfig, for package lora). This package holds only the answer to
// each key.
package trlkeys

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// The TRL fields, as internal/trlref/keys.py writes them.
var (
	//go:embed testdata/trl-grpo-config.tsv
	grpoTSV string
	//go:embed testdata/trl-model-config.tsv
	modelTSV string
	//go:embed testdata/peft-lora-config.tsv
	loraTSV string
)

// Field is one field of a TRL config dataclass: its name, its Python type
// and its default as JSON.
type Field struct {
	Name, Type, Default string
}

// parseTSV reads the lines `name TAB type TAB default` of a keys file.
func parseTSV(data string) []Field {
	var out []Field
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			panic(fmt.Sprintf("trlkeys: bad keys line %q", line)) // an embedded-file error
		}
		out = append(out, Field{Name: parts[0], Type: parts[1], Default: parts[2]})
	}
	return out
}

var (
	grpoFields  = parseTSV(grpoTSV)
	modelFields = parseTSV(modelTSV)
	loraFields  = parseTSV(loraTSV)
	grpoDefault = defaults(grpoFields)
	modelDef    = defaults(modelFields)
)

func defaults(fs []Field) map[string]string {
	m := make(map[string]string, len(fs))
	for _, f := range fs {
		m[f.Name] = f.Default
	}
	return m
}

// GRPOConfigFields returns TRL's GRPOConfig fields (TrainingArguments'
// included) with their types and defaults, in declaration order.
func GRPOConfigFields() []Field { return append([]Field(nil), grpoFields...) }

// ModelConfigFields returns TRL's ModelConfig fields with their types and
// defaults, in declaration order.
func ModelConfigFields() []Field { return append([]Field(nil), modelFields...) }

// LoraConfigFields returns peft's LoraConfig fields (the keys of an
// adapter_config.json) with their types and defaults, in declaration
// order.
func LoraConfigFields() []Field { return append([]Field(nil), loraFields...) }

// rule is what grpokit makes of one TRL key. Its default (def, JSON) is
// TRL's, filled in from the keys files; a value equal to it is accepted
// silently.
type rule struct {
	def string
	// anyValue: every value is accepted (the key has no effect here), with
	// a note when it is not def. Otherwise only def and also are accepted.
	anyValue  bool
	also      []string // other accepted values, as JSON
	why       string
	elsewhere bool // the key belongs in another place of the config
}

// inert accepts any value of a key that has no effect here.
func inert(why string) rule { return rule{anyValue: true, why: why} }

// only accepts TRL's default (and also) of a key grpokit cannot honour.
func only(why string, also ...string) rule { return rule{also: also, why: why} }

// elsewhere refuses a key that belongs in another place of the config.
func elsewhere(why string) rule { return rule{why: why, elsewhere: true} }

// inertKeys is inert(why) for each key.
func inertKeys(why string, keys ...string) map[string]rule {
	m := map[string]rule{}
	for _, k := range keys {
		m[k] = inert(why)
	}
	return m
}

const (
	whyVLLM       = "grpokit generates with its own engine in the training process (KV cache, shared prompt prefixes); vLLM is not used"
	whyOnlyVLLM   = "used only with use_vllm"
	whyOneProcess = "grpokit trains in one process"
	whyHub        = "nothing is uploaded to the Hub; output_dir/final is a Hugging Face folder to upload"
	whyOptim      = "grpokit's optimizer is AdamW (adamw_torch)"
	whyPlumbing   = "logging plumbing: grpokit writes metrics.jsonl and PNG plots (grpokit plot draws them again)"
	whyModelSect  = "a ModelConfig key: in grpokit's config it goes under model: (in Go, load the model with model.Load)"
	whyDataset    = "grpokit downloads nothing: download the dataset (huggingface-cli download NAME --repo-type dataset) and give its Parquet or JSON files as dataset.path (in Go, dataset.LoadDataset)"
)

// grpo are GRPOConfig's keys that grpo.Config has no field for.
var grpo = map[string]rule{
	"model_init_kwargs":                       only("model loading options: grpokit's model section (dtype, load_in_4bit, load_in_8bit) or model.Options set them"),
	"trust_remote_code":                       inert("grpokit runs no code from a checkpoint: its own decoders (llama, qwen2, qwen3, gemma3) load the weights"),
	"router_aux_loss_coef":                    inert("mixture-of-experts models do not load here"),
	"disable_dropout":                         inert("grpokit's decoders apply no dropout; LoRA's is lora_dropout (TRL's disable_dropout also zeroes it: set model.lora_dropout: 0)"),
	"cast_lm_head_to_fp32":                    only("under bfloat16 compute the LM head's product is bfloat16, its logits and log-softmax then float32, as transformers without this flag; for a float32 head compute in float32 (bf16: false)"),
	"remove_unused_columns":                   inert("every column besides the prompt and the answer reaches the rewards as Example.Meta"),
	"ds3_gather_for_generation":               inert("a DeepSpeed ZeRO-3 setting; " + whyOneProcess),
	"pad_to_multiple_of":                      inert("batches are padded to a few fixed lengths per octave"),
	"chat_template_kwargs":                    only("in Go, set grpo.LMPolicyOptions.ChatOptions.Vars (grpokit's config takes chat_template_kwargs)"),
	"cache_implementation":                    inert("generation uses grpokit's own KV cache"),
	"use_vllm":                                only(whyVLLM),
	"log_multimodal":                          inert("log_completions writes every rollout to output_dir/rollouts.jsonl"),
	"log_completions_hub_repo":                only(whyHub),
	"use_transformers_continuous_batching":    inert(whyVLLM),
	"transformers_continuous_batching_config": inert(whyVLLM),
	"use_transformers_paged":                  inert(whyVLLM),
}

// training are TrainingArguments' keys that grpo.Config has no field for.
var training = map[string]rule{
	"lr_scheduler_kwargs":    only("the schedules of lr_scheduler_type take no extra arguments here"),
	"optim":                  only(whyOptim, `"adamw_torch"`, `"adamw_hf"`),
	"optim_args":             only(whyOptim),
	"optim_target_modules":   only(whyOptim),
	"label_smoothing_factor": only("the GRPO loss has no label smoothing"),
	// GRPOConfig's default is true; "false" here, the library's float32
	// default, so that bf16: true, which a user may expect to switch bf16
	// on in grpo.DecodeConfig, gets the note (TestTRLDefaultsParity lists
	// the exception).
	"bf16":                               {def: "false", anyValue: true, why: "the model's compute dtype is model.Options.Compute (grpokit train reads bf16 and model.dtype: bfloat16 by default on XLA, float32 on the pure-Go backend); trainable weights are float32 masters, as under bf16 mixed precision"},
	"fp16":                               only("float16 is not supported: use the model section's dtype: bfloat16"),
	"bf16_full_eval":                     inert("evaluation computes in the model's dtype"),
	"fp16_full_eval":                     only("float16 is not supported: use the model section's dtype: bfloat16"),
	"tf32":                               inert("a CUDA matmul mode; grpokit's backends choose their own precision"),
	"gradient_checkpointing_kwargs":      inert("gradient_checkpointing recomputes each decoder layer here"),
	"torch_compile":                      inert("every graph is compiled here (GoMLX)"),
	"torch_compile_backend":              inert("every graph is compiled here (GoMLX)"),
	"torch_compile_mode":                 inert("every graph is compiled here (GoMLX)"),
	"use_liger_kernel":                   inert("the logits and the loss are computed in chunks here (logits_chunk_size)"),
	"liger_kernel_config":                inert("the logits and the loss are computed in chunks here (logits_chunk_size)"),
	"use_cache":                          inert("generation always uses a KV cache; training needs none"),
	"neftune_noise_alpha":                only("NEFTune noise is not implemented"),
	"torch_empty_cache_steps":            inert("a CUDA allocator setting; the memory plan sets a Go memory limit here"),
	"auto_find_batch_size":               only("the memory plan printed before step 0 stops a run that cannot fit and names what to lower"),
	"logging_strategy":                   only("progress is logged every logging_steps steps (metrics.jsonl gets every step)"),
	"logging_nan_inf_filter":             inert("non-finite steps are skipped and counted (max_nonfinite_steps)"),
	"include_num_input_tokens_seen":      inert("metrics.jsonl has num_tokens"),
	"report_to":                          inert(whyPlumbing),
	"eval_delay":                         only("eval_strategy and eval_steps set when evaluation runs"),
	"save_only_model":                    inert("checkpoints always hold the optimizer state, so every run resumes exactly"),
	"save_strategy":                      only("checkpoints are saved every save_steps steps and save_minutes minutes"),
	"push_to_hub":                        only(whyHub),
	"load_best_model_at_end":             only("the final weights are the last step's"),
	"ignore_data_skip":                   inert("a resumed run continues the data order exactly"),
	"full_determinism":                   inert("runs are deterministic for a seed already (a resumed run is bit-exact)"),
	"data_seed":                          only("seed orders the data"),
	"use_cpu":                            inert("GOMLX_BACKEND (grpokit's backend:) chooses where the graphs run"),
	"train_sampling_strategy":            inert("shuffle_dataset orders the data"),
	"activation_checkpointing":           only("transformers 5's new name for gradient_checkpointing, which grpokit reads: set gradient_checkpointing"),
	"activation_checkpointing_kwargs":    inert("gradient_checkpointing recomputes each decoder layer here"),
	"dataloader_in_order":                inert("the data is read into memory whole"),
	"dataloader_multiprocessing_context": inert("the data is read into memory whole"),
	"ddp_static_graph":                   inert(whyOneProcess),
	"resume_from_checkpoint":             only("grpokit train -resume (resume: true), or grpo.Trainer.Resume, continues a run"),
}

func init() {
	for _, set := range []map[string]rule{
		inertKeys(whyOnlyVLLM, "vllm_structured_outputs_regex", "vllm_server_base_url", "vllm_max_model_length",
			"vllm_importance_sampling_clip_min", "vllm_importance_sampling_cap"),
		{"vllm_mode": inert(whyOnlyVLLM), "vllm_model_impl": inert(whyOnlyVLLM),
			"vllm_enable_sleep_mode": inert(whyOnlyVLLM), "vllm_server_host": inert(whyOnlyVLLM),
			"vllm_server_port": inert(whyOnlyVLLM), "vllm_server_timeout": inert(whyOnlyVLLM),
			"vllm_group_port": inert(whyOnlyVLLM), "vllm_gpu_memory_utilization": inert(whyOnlyVLLM),
			"vllm_tensor_parallel_size": inert(whyOnlyVLLM), "vllm_importance_sampling_correction": inert(whyOnlyVLLM),
			"vllm_importance_sampling_mode": inert(whyOnlyVLLM), "vllm_importance_sampling_clip_max": inert(whyOnlyVLLM)},
		inertKeys("used only with push_to_hub", "hub_token", "hub_private_repo", "hub_model_id", "hub_revision"),
		{"hub_strategy": inert("used only with push_to_hub"), "hub_always_push": inert("used only with push_to_hub")},
		inertKeys("used only with load_best_model_at_end", "metric_for_best_model", "greater_is_better"),
		inertKeys(whyPlumbing, "run_name", "disable_tqdm"),
		{"logging_first_step": inert(whyPlumbing), "log_on_each_node": inert(whyOneProcess),
			"log_level": inert(whyPlumbing), "log_level_replica": inert(whyPlumbing),
			"project": inert(whyPlumbing), "trackio_space_id": inert(whyPlumbing), "trackio_bucket_id": inert(whyPlumbing), "trackio_static_space_id": inert(whyPlumbing),
			"skip_memory_metrics": inert("every run prints its memory plan before step 0"),
			"save_on_each_node":   inert(whyOneProcess), "enable_jit_checkpoint": inert("checkpoints are saved every save_steps steps and save_minutes minutes, and on Ctrl-C"),
			"restore_callback_states_from_checkpoint": inert("grpokit has no callbacks"),
			"average_tokens_across_devices":           inert(whyOneProcess), "local_rank": inert(whyOneProcess),
			"ddp_timeout": inert(whyOneProcess), "debug": inert(whyOneProcess),
			"dataloader_drop_last": inert("the data is read into memory whole"), "dataloader_num_workers": inert("the data is read into memory whole"),
			"dataloader_pin_memory": inert("the data is read into memory whole"), "dataloader_persistent_workers": inert("the data is read into memory whole"),
			"length_column_name": inert("the data is read into memory whole"), "include_for_metrics": inert("evaluation reports the rewards' means"),
			"per_device_eval_batch_size": inert("evaluation generates in generation batches"), "prediction_loss_only": inert("evaluation reports the rewards' means"),
			"eval_on_start": inert("grpokit train evaluates before and after training (eval.n)"), "eval_do_concat_batches": inert("evaluation reports the rewards' means"),
			"eval_use_gather_object": inert(whyOneProcess), "batch_eval_metrics": inert("evaluation reports the rewards' means"),
			"do_train": inert("grpokit train trains"), "do_eval": inert("grpokit train evaluates when eval.n > 0"), "do_predict": inert("grpokit generate predicts")},
		inertKeys(whyOneProcess, "accelerator_config", "parallelism_config", "ddp_find_unused_parameters", "ddp_bucket_cap_mb",
			"ddp_broadcast_buffers", "ddp_backend", "fsdp", "fsdp_config", "deepspeed", "dataloader_prefetch_factor", "label_names", "eval_accumulation_steps"),
	} {
		for k, r := range set {
			training[k] = r
		}
	}
}

// model are TRL's ModelConfig keys that grpokit's model section has no
// field for (keys under "model.").
var model = map[string]rule{
	"model_revision":      inert("the folder given is what loads"),
	"attn_implementation": inert("grpokit's decoders have their own attention"),
	// Not a ModelConfig field (GRPOConfig's), accepted here too.
	"trust_remote_code":      {def: "false", anyValue: true, why: "grpokit runs no code from a checkpoint: its own decoders (llama, qwen2, qwen3, gemma3) load the weights"},
	"lora_target_parameters": only("LoRA adapts the linear modules of lora_target_modules"),
	"lora_modules_to_save":   only("only the LoRA matrices train (use full fine-tuning to train other weights)"),
	"lora_task_type":         only("grpokit trains causal language models"),
	"use_dora":               only("DoRA is not implemented"),
	"bnb_4bit_quant_storage": inert("NF4 codes are held packed, two a byte"),
}

// topLevel are keys of the other parts of a `trl grpo` config file, which
// have a place of their own in grpokit's config (or none).
var topLevel = map[string]rule{
	"dataset_name":              elsewhere(whyDataset),
	"dataset_config":            elsewhere(whyDataset),
	"dataset_train_split":       elsewhere(whyDataset),
	"dataset_test_split":        elsewhere(whyDataset),
	"dataset_streaming":         elsewhere(whyDataset),
	"dataset_mixture":           elsewhere(whyDataset),
	"reward_funcs":              elsewhere("rewards are Go functions: in grpokit's config the built-ins are listed under rewards: (exact, numeric, tags, ...; TRL's think_format_reward, get_soft_overlong_punishment and get_repetition_penalty_reward are think_format, soft_overlong_punishment and repetition_penalty; a reward model, a …ForSequenceClassification folder, is {type: reward_model, path: FOLDER})"),
	"reward_model_name_or_path": elsewhere("a reward model goes under rewards: as {type: reward_model, path: FOLDER} (a …ForSequenceClassification folder with its tokenizer)"),
}

func init() {
	// ModelConfig's keys at the top level (and torch_dtype, dtype's old
	// name) say where they go.
	topLevel["torch_dtype"] = elsewhere(whyModelSect)
	for _, f := range modelFields {
		topLevel[f.Name] = elsewhere(whyModelSect)
	}
	// Every answer's default is TRL's, from the keys files.
	fill := func(table map[string]rule, defs map[string]string) {
		for k, r := range table {
			if d, ok := defs[k]; ok && r.def == "" && !r.elsewhere {
				r.def = d
				table[k] = r
			}
		}
	}
	fill(grpo, grpoDefault)
	fill(training, grpoDefault)
	fill(model, modelDef)
}

// Unanswered returns the TRL fields that neither have an answer here nor
// are in settings (the JSON names of grpokit's own config fields): a
// GRPOConfig key when model is false, a ModelConfig key when it is true.
// It also returns the answered keys that are not TRL fields and carry no
// default of their own (a key TRL has dropped). Both lists are sorted.
func Unanswered(settings map[string]bool, modelKeys bool) (missing, stale []string) {
	fs, tables := grpoFields, []map[string]rule{grpo, training}
	if modelKeys {
		fs, tables = modelFields, []map[string]rule{model}
	}
	known := map[string]bool{}
	for _, f := range fs {
		known[f.Name] = true
		if settings[f.Name] {
			continue
		}
		answered := false
		for _, t := range tables {
			if _, ok := t[f.Name]; ok {
				answered = true
			}
		}
		if !answered {
			missing = append(missing, f.Name)
		}
	}
	for _, t := range tables {
		for k, r := range t {
			if !known[k] && r.def == "" {
				stale = append(stale, k)
			}
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	return missing, stale
}

// Check answers for a key that grpokit's config struct has no field for:
// path is the key with its section ("use_vllm", "model.use_dora"), v its
// value as decoded from JSON. known reports whether the key is TRL's (or
// transformers'); an accepted key has a nil err and, when its value has no
// effect here, a note saying why. An error names the key, the value and
// what to do instead.
func Check(path string, v any) (known bool, note string, err error) {
	r, ok := lookup(path)
	if !ok {
		return false, "", nil
	}
	if r.elsewhere {
		return true, "", fmt.Errorf("TRL's %q: %s", path, r.why)
	}
	if equal(v, r.def) {
		return true, "", nil
	}
	if r.anyValue {
		return true, fmt.Sprintf("%s: %s has no effect: %s", path, show(v), r.why), nil
	}
	for _, a := range r.also {
		if equal(v, a) {
			return true, "", nil
		}
	}
	return true, "", fmt.Errorf("TRL's %s: %s is not supported: %s", path, show(v), r.why)
}

// equal reports whether v is the JSON value lit (numbers compared as
// numbers).
func equal(v any, lit string) bool {
	var want any
	dec := json.NewDecoder(strings.NewReader(lit))
	dec.UseNumber()
	if err := dec.Decode(&want); err != nil {
		panic(fmt.Sprintf("trlkeys: bad default %s: %v", lit, err)) // a table error
	}
	return reflect.DeepEqual(normal(v), normal(want))
}

// normal turns every json.Number in v into a float64.
func normal(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return x.String()
		}
		return f
	case float64, int:
		return reflect.ValueOf(x).Convert(reflect.TypeFor[float64]()).Interface()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normal(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normal(e)
		}
		return out
	}
	return v
}

// show renders v as compact JSON for a message.
func show(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(b.String())
}

// Default returns the default this package holds for a TRL key that
// grpokit's config has no field for (path as for Check), as JSON, and
// whether the key has one: a key that belongs elsewhere has none.
func Default(path string) (string, bool) {
	r, ok := lookup(path)
	return r.def, ok && !r.elsewhere
}

// lookup returns the rule of path: a "model." key from the model table,
// any other from GRPOConfig's, TrainingArguments' or the top-level keys'.
func lookup(path string) (rule, bool) {
	if key, inModel := strings.CutPrefix(path, "model."); inModel {
		r, ok := model[key]
		return r, ok
	}
	for _, table := range []map[string]rule{grpo, training, topLevel} {
		if r, ok := table[path]; ok {
			return r, true
		}
	}
	return rule{}, false
}
