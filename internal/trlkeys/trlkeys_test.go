package trlkeys_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/strictcfg"
	"github.com/grpokit/grpokit/internal/trlkeys"
)

// readKeys returns TRL 1.16's fields (GRPOConfig, or ModelConfig with
// model): key → default, as JSON values (testdata, written by
// internal/trlref/keys.py from the installed TRL).
func readKeys(t *testing.T, model bool) map[string]any {
	t.Helper()
	fs := trlkeys.GRPOConfigFields()
	if model {
		fs = trlkeys.ModelConfigFields()
	}
	keys := map[string]any{}
	for _, f := range fs {
		dec := json.NewDecoder(strings.NewReader(f.Default))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %s: %v", f.Name, f.Default, err)
		}
		keys[f.Name] = v
	}
	if len(keys) < 15 {
		t.Fatalf("%d keys", len(keys))
	}
	return keys
}

// Every TRL field is a grpo.Config setting or has an answer here, and no
// answer is left for a key TRL no longer has.
func TestEveryFieldHasAnAnswer(t *testing.T) {
	settings := map[string]bool{}
	for k := range strictcfg.Fields(reflect.TypeFor[grpo.Config]()) {
		settings[k] = true
	}
	for _, model := range []bool{false, true} {
		s := settings
		if model {
			s = map[string]bool{}
			for _, k := range []string{"model_name_or_path", "dtype", "use_peft", "lora_r", "lora_alpha", "lora_dropout",
				"lora_target_modules", "use_rslora", "load_in_4bit", "load_in_8bit", "bnb_4bit_quant_type", "use_bnb_nested_quant"} {
				s[k] = true // the model section's settings (cmd/grpokit's runconfig)
			}
		}
		missing, stale := trlkeys.Unanswered(s, model)
		for _, k := range missing {
			t.Errorf("TRL 1.16's %q (model %v) has no answer and is no setting", k, model)
		}
		for _, k := range stale {
			t.Errorf("answer for %q, which TRL 1.16 does not have", k)
		}
	}
}

// grpokitOwn are the grpo.Config keys that are not TRL 1.16 fields;
// docs/trl.md lists them as grpokit's own.
var grpokitOwn = []string{"drop_zero_std_groups", "dynamic_sampling", "dynamic_sampling_max_rounds", "episode_select",
	"logits_chunk_size", "max_nonfinite_steps", "max_prompt_length", "max_turns", "min_completion_length",
	"overwrite_output_dir", "reward_timeout", "reward_workers", "save_minutes", "share_prompts", "warmup_ratio"}

// The grpo.Config keys that are not TRL's are exactly grpokitOwn: a key
// TRL drops (or adds) shows here.
func TestOwnKeys(t *testing.T) {
	trl := readKeys(t, false)
	var own []string
	for k := range strictcfg.Fields(reflect.TypeFor[grpo.Config]()) {
		if _, ok := trl[k]; !ok {
			own = append(own, k)
		}
	}
	sort.Strings(own)
	if !slices.Equal(own, grpokitOwn) {
		t.Errorf("grpo.Config keys TRL 1.16 does not have: %v, want %v (docs/trl.md lists them)", own, grpokitOwn)
	}
}

// A TRL key that is a grpo.Config setting has no answer here: an answer
// ("has no effect here") would contradict the setting that works.
func TestNoAnswerForASetting(t *testing.T) {
	fields := strictcfg.Fields(reflect.TypeFor[grpo.Config]())
	for k, def := range readKeys(t, false) {
		if _, ok := fields[k]; !ok {
			continue
		}
		if known, _, _ := trlkeys.Check(k, def); known {
			t.Errorf("%q is a grpo.Config setting and also answered by trlkeys", k)
		}
	}
}

// Every key of TRL 1.16's GRPOConfig (TrainingArguments included) is
// either a grpo.Config setting or answered here, and at TRL's default
// value it is accepted: a TRL config written out whole loads.
func TestEveryTRLKeyAnswered(t *testing.T) {
	fields := strictcfg.Fields(reflect.TypeFor[grpo.Config]())
	answered := 0
	for k, def := range readKeys(t, false) {
		if _, ok := fields[k]; ok {
			continue
		}
		known, _, err := trlkeys.Check(k, def)
		if !known {
			t.Errorf("TRL's %q has no answer", k)
		}
		if err != nil {
			t.Errorf("TRL's %q at its default %v: %v", k, def, err)
		}
		answered++
	}
	// The model keys: under model: in grpokit's config; at the top level
	// they are refused with where they go.
	for k, def := range readKeys(t, true) {
		known, _, err := trlkeys.Check(k, def)
		if !known || err == nil || !strings.Contains(err.Error(), "goes under model:") {
			t.Errorf("top-level %q: %v, %v; want it sent under model:", k, known, err)
		}
		answered++
	}
	t.Logf("%d keys answered", answered)
}

// A key that is a grpo.Config setting has no answer here: the answer
// would contradict the setting (or never be read).
func TestNoAnswerForSettings(t *testing.T) {
	ours := defaults(t)
	for k := range strictcfg.Fields(reflect.TypeFor[grpo.Config]()) {
		if known, _, _ := trlkeys.Check(k, ours[k]); known {
			t.Errorf("%q is a grpo.Config setting and also answered by trlkeys", k)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		key   string
		value string // JSON
		known bool
		note  string // substring; "" wants none
		err   string // substring; "" wants none
	}{
		{"report_to", `"none"`, true, "", ""},
		{"report_to", `["wandb", "tensorboard"]`, true, `report_to: ["wandb","tensorboard"] has no effect: logging plumbing`, ""},
		{"use_vllm", "false", true, "", ""},
		{"use_vllm", "true", true, "", "TRL's use_vllm: true is not supported: grpokit generates with its own engine"},
		{"optim", `"adamw_torch_fused"`, true, "", ""},
		{"optim", `"adamw_torch"`, true, "", ""},
		{"optim", `"adafactor"`, true, "", `optim: "adafactor" is not supported: grpokit's optimizer is AdamW`},
		{"vllm_server_port", "8000", true, "", ""},
		{"vllm_server_port", "8001", true, "vllm_server_port: 8001 has no effect: used only with use_vllm", ""},
		{"ddp_timeout", "1800.0", true, "", ""}, // numbers compare as numbers
		{"bf16", "true", true, "bf16: true has no effect: the model's compute dtype is model.Options.Compute", ""},
		{"bf16", "false", true, "", ""},
		{"fp16", "true", true, "", "float16 is not supported"},
		{"lr_scheduler_kwargs", `{"num_cycles": 2}`, true, "", "take no extra arguments"},
		{"dataset_name", `"openai/gsm8k"`, true, "", "grpokit downloads nothing"},
		{"lora_r", "16", true, "", `TRL's "lora_r": a ModelConfig key: in grpokit's config it goes under model:`},
		{"model.use_dora", "false", true, "", ""},
		{"model.use_dora", "true", true, "", "DoRA is not implemented"},
		{"model.lora_task_type", `"SEQ_CLS"`, true, "", "causal language models"},
		{"model.attn_implementation", `"flash_attention_2"`, true, "has no effect", ""},
		{"cast_lm_head_to_fp32", "false", true, "", ""},
		{"cast_lm_head_to_fp32", "true", true, "", "for a float32 head compute in float32 (bf16: false)"},
		{"disable_dropout", "true", true, "set model.lora_dropout: 0", ""},
		{"lerning_rate", "1", false, "", ""},
		{"model.report_to", `"none"`, false, "", ""},
		{"dataset.use_vllm", "false", false, "", ""},
	} {
		dec := json.NewDecoder(strings.NewReader(tc.value))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		known, note, err := trlkeys.Check(tc.key, v)
		if known != tc.known || (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) ||
			(tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Check(%s, %s) = %v, %q, %v; want %v, note %q, error %q", tc.key, tc.value, known, note, err, tc.known, tc.note, tc.err)
		}
	}
}

// grpo.DecodeConfig reads a TRL config: TRL's keys at their defaults and
// inert ones pass, one asking for what grpokit does not do fails, a typo
// still fails with its suggestion.
func TestDecodeConfigTRL(t *testing.T) {
	c, err := grpo.DecodeConfig([]byte(`{"learning_rate": 1e-6, "use_vllm": false, "report_to": "wandb", "bf16": true,
		"gradient_checkpointing": true, "vllm_mode": "server", "optim": "adamw_torch", "num_generations": 8}`))
	if err != nil || c.LearningRate != 1e-6 || !c.GradientCheckpointing {
		t.Fatalf("%+v, %v", c, err)
	}
	c, err = grpo.DecodeConfig([]byte(`{"beta": 0.04, "sync_ref_model": true, "ref_model_mixup_alpha": 0.9, "ref_model_sync_steps": 64}`))
	if err != nil || !c.SyncRefModel || c.RefModelMixupAlpha != 0.9 || c.RefModelSyncSteps != 64 {
		t.Fatalf("TR-DPO keys: %+v, %v", c, err)
	}
	for in, want := range map[string]string{
		`{"use_vllm": true}`:       "use_vllm: true is not supported",
		`{"lerning_rate": 0.1}`:    `unknown key "lerning_rate" (did you mean "learning_rate"?)`,
		`{"sync_ref_model": true}`: "SyncRefModel = true: needs Beta ≠ 0",
	} {
		if _, err := grpo.DecodeConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
