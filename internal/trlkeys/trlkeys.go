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
// The keys and defaults are those of TRL 1.10 (trl/trainer/grpo_config.py,
// model_config.py) and transformers' training_args.py of the same time.
package trlkeys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// rule is what grpokit makes of one TRL key.
type rule struct {
	def string // TRL's default, as JSON; accepted silently
	// anyValue: every value is accepted (the key has no effect here), with
	// a note when it is not def. Otherwise only def and also are accepted.
	anyValue bool
	also     []string // other accepted values, as JSON
	why      string
}

// inert accepts any value of a key that has no effect here.
func inert(def, why string) rule { return rule{def: def, anyValue: true, why: why} }

// only accepts TRL's default (and also) of a key grpokit cannot honour.
func only(def, why string, also ...string) rule { return rule{def: def, also: also, why: why} }

// elsewhere refuses a key that belongs in another place of the config.
func elsewhere(why string) rule { return rule{why: why} }

// inertKeys is inert(def, why) for each key.
func inertKeys(def, why string, keys ...string) map[string]rule {
	m := map[string]rule{}
	for _, k := range keys {
		m[k] = inert(def, why)
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
	"model_init_kwargs":                       only("null", "model loading options: grpokit's model section (dtype, load_in_4bit, load_in_8bit) or model.Options set them"),
	"trust_remote_code":                       inert("false", "grpokit runs no code from a checkpoint: its own decoders (llama, qwen2, qwen3, gemma3) load the weights"),
	"router_aux_loss_coef":                    inert("0.001", "mixture-of-experts models do not load here"),
	"disable_dropout":                         inert("false", "grpokit's decoders apply no dropout; LoRA's is lora_dropout (TRL's disable_dropout also zeroes it: set model.lora_dropout: 0)"),
	"cast_lm_head_to_fp32":                    only("false", "under bfloat16 compute the LM head's product is bfloat16, its logits and log-softmax then float32, as transformers without this flag; for a float32 head compute in float32 (bf16: false)"),
	"remove_unused_columns":                   inert("false", "every column besides the prompt and the answer reaches the rewards as Example.Meta"),
	"ds3_gather_for_generation":               inert("true", "a DeepSpeed ZeRO-3 setting; "+whyOneProcess),
	"pad_to_multiple_of":                      inert("null", "batches are padded to a few fixed lengths per octave"),
	"chat_template_kwargs":                    only("null", "in Go, set grpo.LMPolicyOptions.ChatOptions.Vars (grpokit's config takes chat_template_kwargs)"),
	"cache_implementation":                    inert("null", "generation uses grpokit's own KV cache"),
	"use_vllm":                                only("false", whyVLLM),
	"log_multimodal":                          inert("true", "log_completions writes every rollout to output_dir/rollouts.jsonl"),
	"log_completions_hub_repo":                only("null", whyHub),
	"use_transformers_continuous_batching":    inert("false", whyVLLM),
	"transformers_continuous_batching_config": inert("null", whyVLLM),
	"use_transformers_paged":                  inert("false", whyVLLM),
}

// training are TrainingArguments' keys that grpo.Config has no field for.
var training = map[string]rule{
	"lr_scheduler_kwargs":    only("null", "the schedules of lr_scheduler_type take no extra arguments here"),
	"optim":                  only(`"adamw_torch"`, whyOptim, `"adamw_torch_fused"`, `"adamw_hf"`),
	"optim_args":             only("null", whyOptim),
	"optim_target_modules":   only("null", whyOptim),
	"label_smoothing_factor": only("0", "the GRPO loss has no label smoothing"),
	// GRPOConfig's default is true; "false" here, the library's float32
	// default, so that bf16: true, which a user may expect to switch bf16
	// on in grpo.DecodeConfig, gets the note (TestTRLDefaultsParity lists
	// the exception).
	"bf16":                          inert("false", "the model's compute dtype is model.Options.Compute (grpokit train reads bf16 and model.dtype: bfloat16 by default on XLA, float32 on the pure-Go backend); trainable weights are float32 masters, as under bf16 mixed precision"),
	"fp16":                          only("false", "float16 is not supported: use the model section's dtype: bfloat16"),
	"bf16_full_eval":                inert("false", "evaluation computes in the model's dtype"),
	"fp16_full_eval":                only("false", "float16 is not supported: use the model section's dtype: bfloat16"),
	"tf32":                          inert("null", "a CUDA matmul mode; grpokit's backends choose their own precision"),
	"gradient_checkpointing_kwargs": inert("null", "gradient_checkpointing recomputes each decoder layer here"),
	"torch_compile":                 inert("false", "every graph is compiled here (GoMLX)"),
	"torch_compile_backend":         inert("null", "every graph is compiled here (GoMLX)"),
	"torch_compile_mode":            inert("null", "every graph is compiled here (GoMLX)"),
	"use_liger_kernel":              inert("false", "the logits and the loss are computed in chunks here (logits_chunk_size)"),
	"liger_kernel_config":           inert("null", "the logits and the loss are computed in chunks here (logits_chunk_size)"),
	"use_cache":                     inert("false", "generation always uses a KV cache; training needs none"),
	"neftune_noise_alpha":           only("null", "NEFTune noise is not implemented"),
	"torch_empty_cache_steps":       inert("null", "a CUDA allocator setting; the memory plan sets a Go memory limit here"),
	"auto_find_batch_size":          only("false", "the memory plan printed before step 0 stops a run that cannot fit and names what to lower"),
	"logging_strategy":              only(`"steps"`, "progress is logged every logging_steps steps (metrics.jsonl gets every step)"),
	"logging_nan_inf_filter":        inert("true", "non-finite steps are skipped and counted (max_nonfinite_steps)"),
	"include_num_input_tokens_seen": inert(`"no"`, "metrics.jsonl has num_tokens"),
	"report_to":                     inert(`"none"`, whyPlumbing),
	"eval_delay":                    only("0", "eval_strategy and eval_steps set when evaluation runs"),
	"save_only_model":               inert("false", "checkpoints always hold the optimizer state, so every run resumes exactly"),
	"save_strategy":                 only(`"steps"`, "checkpoints are saved every save_steps steps and save_minutes minutes"),
	"push_to_hub":                   only("false", whyHub),
	"load_best_model_at_end":        only("false", "the final weights are the last step's"),
	"ignore_data_skip":              inert("false", "a resumed run continues the data order exactly"),
	"full_determinism":              inert("false", "runs are deterministic for a seed already (a resumed run is bit-exact)"),
	"data_seed":                     only("null", "seed orders the data"),
	"use_cpu":                       inert("false", "GOMLX_BACKEND (grpokit's backend:) chooses where the graphs run"),
	"train_sampling_strategy":       inert(`"random"`, "shuffle_dataset orders the data"),
	"resume_from_checkpoint":        only("null", "grpokit train -resume (resume: true), or grpo.Trainer.Resume, continues a run"),
}

func init() {
	for _, set := range []map[string]rule{
		inertKeys("null", whyOnlyVLLM, "vllm_structured_outputs_regex", "vllm_server_base_url", "vllm_max_model_length",
			"vllm_importance_sampling_clip_min", "vllm_importance_sampling_cap"),
		{"vllm_mode": inert(`"colocate"`, whyOnlyVLLM), "vllm_model_impl": inert(`"vllm"`, whyOnlyVLLM),
			"vllm_enable_sleep_mode": inert("false", whyOnlyVLLM), "vllm_server_host": inert(`"0.0.0.0"`, whyOnlyVLLM),
			"vllm_server_port": inert("8000", whyOnlyVLLM), "vllm_server_timeout": inert("240", whyOnlyVLLM),
			"vllm_group_port": inert("51216", whyOnlyVLLM), "vllm_gpu_memory_utilization": inert("0.3", whyOnlyVLLM),
			"vllm_tensor_parallel_size": inert("1", whyOnlyVLLM), "vllm_importance_sampling_correction": inert("true", whyOnlyVLLM),
			"vllm_importance_sampling_mode": inert(`"sequence_mask"`, whyOnlyVLLM), "vllm_importance_sampling_clip_max": inert("3", whyOnlyVLLM)},
		inertKeys("null", "used only with push_to_hub", "hub_token", "hub_private_repo", "hub_model_id", "hub_revision"),
		{"hub_strategy": inert(`"every_save"`, "used only with push_to_hub"), "hub_always_push": inert("false", "used only with push_to_hub")},
		inertKeys("null", "used only with load_best_model_at_end", "metric_for_best_model", "greater_is_better"),
		inertKeys("null", whyPlumbing, "run_name", "logging_dir", "disable_tqdm"),
		{"logging_first_step": inert("false", whyPlumbing), "log_on_each_node": inert("true", whyOneProcess),
			"log_level": inert(`"passive"`, whyPlumbing), "log_level_replica": inert(`"warning"`, whyPlumbing),
			"project": inert(`"huggingface"`, whyPlumbing), "trackio_space_id": inert(`"trackio"`, whyPlumbing),
			"skip_memory_metrics": inert("true", "every run prints its memory plan before step 0"),
			"save_on_each_node":   inert("false", whyOneProcess), "enable_jit_checkpoint": inert("false", "checkpoints are saved every save_steps steps and save_minutes minutes, and on Ctrl-C"),
			"restore_callback_states_from_checkpoint": inert("false", "grpokit has no callbacks"),
			"average_tokens_across_devices":           inert("true", whyOneProcess), "local_rank": inert("-1", whyOneProcess),
			"ddp_timeout": inert("1800", whyOneProcess), "debug": inert(`""`, whyOneProcess),
			"dataloader_drop_last": inert("false", "the data is read into memory whole"), "dataloader_num_workers": inert("0", "the data is read into memory whole"),
			"dataloader_pin_memory": inert("true", "the data is read into memory whole"), "dataloader_persistent_workers": inert("false", "the data is read into memory whole"),
			"length_column_name": inert(`"length"`, "the data is read into memory whole"), "include_for_metrics": inert("[]", "evaluation reports the rewards' means"),
			"per_device_eval_batch_size": inert("8", "evaluation generates in generation batches"), "prediction_loss_only": inert("false", "evaluation reports the rewards' means"),
			"eval_on_start": inert("false", "grpokit train evaluates before and after training (eval.n)"), "eval_do_concat_batches": inert("true", "evaluation reports the rewards' means"),
			"eval_use_gather_object": inert("false", whyOneProcess), "batch_eval_metrics": inert("false", "evaluation reports the rewards' means"),
			"do_train": inert("false", "grpokit train trains"), "do_eval": inert("false", "grpokit train evaluates when eval.n > 0"), "do_predict": inert("false", "grpokit generate predicts")},
		inertKeys("null", whyOneProcess, "accelerator_config", "parallelism_config", "ddp_find_unused_parameters", "ddp_bucket_cap_mb",
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
	"model_revision":         inert(`"main"`, "the folder given is what loads"),
	"attn_implementation":    inert("null", "grpokit's decoders have their own attention"),
	"trust_remote_code":      inert("false", "grpokit runs no code from a checkpoint: its own decoders (llama, qwen2, qwen3, gemma3) load the weights"),
	"lora_target_parameters": only("null", "LoRA adapts the linear modules of lora_target_modules"),
	"lora_modules_to_save":   only("null", "only the LoRA matrices train (use full fine-tuning to train other weights)"),
	"lora_task_type":         only(`"CAUSAL_LM"`, "grpokit trains causal language models"),
	"use_dora":               only("false", "DoRA is not implemented"),
	"bnb_4bit_quant_storage": inert("null", "NF4 codes are held packed, two a byte"),
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
	for _, k := range []string{"model_name_or_path", "dtype", "torch_dtype", "use_peft", "lora_r", "lora_alpha", "lora_dropout",
		"lora_target_modules", "use_rslora", "load_in_4bit", "load_in_8bit", "bnb_4bit_quant_type", "use_bnb_nested_quant",
		"model_revision", "attn_implementation", "lora_target_parameters", "lora_modules_to_save", "lora_task_type", "use_dora",
		"bnb_4bit_quant_storage"} {
		topLevel[k] = elsewhere(whyModelSect)
	}
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
	if r.def == "" { // a key that belongs elsewhere
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
	return r.def, ok && r.def != ""
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
