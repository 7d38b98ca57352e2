package lora

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/grpokit/grpokit/internal/regfile"
	"github.com/grpokit/grpokit/internal/trlkeys"
	"github.com/grpokit/grpokit/model"
)

// peftKeys answers for every field of peft's LoraConfig (the keys of
// adapter_config.json; trlkeys.LoraConfigFields, introspected from peft
// 0.21.2): keyRead fields are read (peftConfig), keyInert ones change
// nothing for an adapter whose weights are loaded (metadata, how the
// weights were first initialized, which modules got adapters: the tensors
// say), and keyDefault ones are refused unless at peft's default, with
// the reason.
var peftKeys = map[string]string{
	"task_type": keyRead, "peft_type": keyRead, "base_model_name_or_path": keyRead, "inference_mode": keyRead,
	"r": keyRead, "target_modules": keyRead, "lora_alpha": keyRead, "lora_dropout": keyRead,
	"fan_in_fan_out": keyRead, "bias": keyRead, "use_rslora": keyRead, "use_dora": keyRead,

	"auto_mapping": keyInert, "peft_version": keyInert, "revision": keyInert, "exclude_modules": keyInert,
	"init_lora_weights": keyInert, "layers_to_transform": keyInert, "layers_pattern": keyInert,
	"megatron_config": keyInert, "megatron_core": keyInert, "loftq_config": keyInert, "eva_config": keyInert,
	"corda_config": keyInert, "lora_ga_config": keyInert, "runtime_config": keyInert, "ensure_weight_tying": keyInert,

	"modules_to_save":         "whole modules trained beside the adapter are not loaded",
	"rank_pattern":            "per-module ranks are not supported (one r for every module)",
	"alpha_pattern":           "per-module alphas are not supported (one lora_alpha for every module)",
	"trainable_token_indices": "trainable token embeddings are not supported",
	"velora_config":           "VeLoRA is not supported",
	"alora_invocation_tokens": "activated LoRA (aLoRA) is not supported",
	"use_qalora":              "QALoRA is not supported",
	"qalora_group_size":       "QALoRA is not supported",
	"monteclora_config":       "MonteCLoRA is not supported",
	"layer_replication":       "layer replication is not supported",
	"lora_bias":               "a LoRA bias is not supported",
	"target_parameters":       "LoRA on parameters (target_parameters) is not supported; target_modules are",
	"use_bdlora":              "BD-LoRA is not supported",
	"arrow_config":            "Arrow routing is not supported",
	"kasa_config":             "KaSA is not supported",
}

const (
	keyRead  = "read"
	keyInert = "inert"
)

// checkPEFTKeys refuses the adapter_config.json keys whose value asks for
// what Load does not do (a keyDefault key not at peft's default).
func checkPEFTKeys(data []byte) []error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return []error{err}
	}
	defaults := map[string]string{}
	for _, f := range trlkeys.LoraConfigFields() {
		defaults[f.Name] = f.Default
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		why, ok := peftKeys[k]
		if !ok || why == keyRead || why == keyInert {
			continue // a newer peft's key, or one answered above
		}
		var got, want any
		if json.Unmarshal(raw[k], &got) != nil || json.Unmarshal([]byte(defaults[k]), &want) != nil || !reflect.DeepEqual(got, want) {
			errs = append(errs, fmt.Errorf("lora: %s %s: %s", k, raw[k], why))
		}
	}
	return errs
}

// peftPrefix is what PEFT puts before a module's HF name in adapter keys.
const peftPrefix = "base_model.model."

// peftConfig is adapter_config.json as PEFT writes it (the fields we use).
type peftConfig struct {
	PeftType      string   `json:"peft_type"`
	TaskType      string   `json:"task_type"`
	R             int      `json:"r"`
	LoraAlpha     float64  `json:"lora_alpha"`
	LoraDropout   float64  `json:"lora_dropout"`
	TargetModules []string `json:"target_modules"`
	Bias          string   `json:"bias"`
	UseRSLoRA     bool     `json:"use_rslora"`
	UseDora       bool     `json:"use_dora"`
	FanInFanOut   bool     `json:"fan_in_fan_out"`
	BaseModel     string   `json:"base_model_name_or_path,omitempty"`
	InferenceMode bool     `json:"inference_mode"`
}

// Save writes the adapter in PEFT's layout to dir: adapter_config.json and
// adapter_model.safetensors with keys base_model.model.<module>.lora_{A,B}.weight,
// <module> named as in transformers' module tree for the architecture
// (model.Config.ModuleName: a multimodal Gemma 3's language model is
// model.language_model.layers.…, what PEFT writes with transformers >= 4.52).
func (a *Adapter) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	alpha := a.cfg.Alpha
	if alpha == 0 {
		alpha = float64(a.cfg.R)
	}
	pc := peftConfig{
		PeftType: "LORA", TaskType: "CAUSAL_LM", R: a.cfg.R, LoraAlpha: alpha, LoraDropout: a.cfg.Dropout,
		TargetModules: a.cfg.targets(), Bias: "none", UseRSLoRA: a.cfg.RSLoRA, InferenceMode: true,
	}
	js, err := json.MarshalIndent(pc, "", "  ")
	if err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), js, 0o644); err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	var ts []model.NamedTensor
	mcfg := a.m.Config()
	for _, mod := range a.modules {
		for _, ab := range []string{".lora_A.weight", ".lora_B.weight"} {
			data, shape, err := a.value(mod + ab)
			if err != nil {
				return err
			}
			ts = append(ts, model.NamedTensor{Name: peftPrefix + mcfg.ModuleName(mod) + ab, Shape: shape, Data: data})
		}
	}
	if err := model.WriteSafetensors(filepath.Join(dir, "adapter_model.safetensors"), ts); err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	return nil
}

// Load reads a PEFT LoRA adapter (adapter_config.json and
// adapter_model.safetensors) from dir and attaches it to m, freezing m's
// base weights. Every problem is reported at once. Keys are mapped with
// model.Config.CanonicalName, so a multimodal Gemma 3 adapter may use either
// layout (base_model.model.language_model.model.… or
// base_model.model.model.language_model.…); its vision-tower entries (PEFT
// adapts SigLIP's q_proj/v_proj too) are skipped with one logged line.
func Load(m *model.Model, dir string) (*Adapter, error) {
	data, err := regfile.ReadFile(filepath.Join(dir, "adapter_config.json"), regfile.MaxMeta)
	if err != nil {
		return nil, fmt.Errorf("lora: %w", err)
	}
	var pc peftConfig
	if err := json.Unmarshal(data, &pc); err != nil {
		return nil, fmt.Errorf("lora: parse %s: %w", filepath.Join(dir, "adapter_config.json"), err)
	}
	errs := checkPEFTKeys(data)
	if pc.PeftType != "LORA" {
		errs = append(errs, fmt.Errorf("lora: peft_type %q, want LORA", pc.PeftType))
	}
	if pc.Bias != "" && pc.Bias != "none" {
		errs = append(errs, fmt.Errorf("lora: bias %q is not supported (want none)", pc.Bias))
	}
	if pc.UseDora {
		errs = append(errs, errors.New("lora: use_dora is not supported"))
	}
	if pc.FanInFanOut {
		errs = append(errs, errors.New("lora: fan_in_fan_out is not supported"))
	}
	cfg := Config{R: pc.R, Alpha: pc.LoraAlpha, Dropout: pc.LoraDropout, RSLoRA: pc.UseRSLoRA, TargetModules: pc.TargetModules}
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("lora: %s: %w", dir, errors.Join(errs...))
	}
	ts, err := model.ReadSafetensors(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("lora: %w", err)
	}
	byName := map[string]model.NamedTensor{}
	var modules []string
	skipped := 0
	for _, t := range ts {
		key, ok := strings.CutPrefix(t.Name, peftPrefix)
		if ok {
			var vision bool
			if key, vision = m.Config().CanonicalName(key); vision {
				skipped++
				continue
			}
		}
		mod, ab := "", ""
		if ok {
			for _, suf := range []string{".lora_A.weight", ".lora_B.weight"} {
				if m, found := strings.CutSuffix(key, suf); found {
					mod, ab = m, suf
				}
			}
		}
		if mod == "" {
			errs = append(errs, fmt.Errorf("lora: unexpected tensor %q in adapter_model.safetensors", t.Name))
			continue
		}
		if shape, err := m.WeightShape(mod + ".weight"); err != nil {
			errs = append(errs, fmt.Errorf("lora: tensor %q adapts unknown module %q", t.Name, mod))
			continue
		} else {
			want := []int{cfg.R, shape[1]}
			if ab == ".lora_B.weight" {
				want = []int{shape[0], cfg.R}
			}
			if !slices.Equal(t.Shape, want) {
				errs = append(errs, &model.WeightError{Name: t.Name, Want: want, Got: t.Shape})
				continue
			}
		}
		byName[key] = t
		if !slices.Contains(modules, mod) {
			modules = append(modules, mod)
		}
	}
	for _, mod := range modules {
		for _, ab := range []string{".lora_A.weight", ".lora_B.weight"} {
			if _, ok := byName[mod+ab]; !ok {
				errs = append(errs, fmt.Errorf("lora: adapter_model.safetensors lacks %q", peftPrefix+m.Config().ModuleName(mod)+ab))
			}
		}
	}
	if skipped > 0 {
		m.Logger().Info("lora: loading the language model's adapters only; skipped the vision tower's", "dir", dir, "tensors", skipped)
	}
	if len(modules) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("lora: adapter_model.safetensors has no LoRA tensors"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("lora: load %s: %w", dir, errors.Join(errs...))
	}
	// Keep model order for the variables.
	a := &Adapter{m: m, cfg: cfg}
	for _, w := range m.Config().Weights() {
		if mod, ok := strings.CutSuffix(w.Name, ".weight"); ok && slices.Contains(modules, mod) {
			a.modules = append(a.modules, mod)
		}
	}
	for _, mod := range a.modules {
		for _, ab := range []string{".lora_A.weight", ".lora_B.weight"} {
			t := byName[mod+ab]
			if err := a.setVar(mod+ab, t.Data, t.Shape); err != nil {
				return nil, err
			}
		}
	}
	m.SetBaseTrainable(false)
	m.SetAdapter(a)
	return a, nil
}
