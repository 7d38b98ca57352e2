package main

import (
	"encoding/json"
	"testing"

	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/trlkeys"
)

// commandDefaults are the settings in which grpokit train's defaults
// differ from grpo.DefaultConfig() (TRL 1.16's GRPOConfig defaults), each
// with the value the command uses; docs/trl.md and docs/reliability.md say
// why. Every other setting must be the library's (and so TRL's).
var commandDefaults = map[string]any{
	"output_dir":       "runs/grpokit", // the run's folder when the file names none
	"save_minutes":     float64(grpo.DefaultSaveMinutes),
	"save_total_limit": float64(2),
}

// TestCommandDefaultsAreTRLs: a config file that leaves a TRL key out gets
// TRL's default from grpokit train, as from TRL, apart from the settings
// commandDefaults names.
func TestCommandDefaultsAreTRLs(t *testing.T) {
	asMap := func(c grpo.Config) map[string]any {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	lib, cmd := asMap(grpo.DefaultConfig()), asMap(defaultRunConfig().Config)
	for k, want := range lib {
		got := cmd[k]
		if v, ok := commandDefaults[k]; ok {
			want = v
		}
		if g, w := show(t, got), show(t, want); g != w {
			t.Errorf("grpokit train's default %s is %s, want %s", k, g, w)
		}
	}
}

func show(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCommandModelDefaultsAreTRLs: the model section's LoRA and
// quantization defaults are TRL 1.16 ModelConfig's (introspected from the
// installed TRL by internal/trlref/keys.py), but for
// lora_dropout, which is 0 because gradient checkpointing (on by default)
// recomputes the forward pass and cannot replay a dropout mask.
func TestCommandModelDefaultsAreTRLs(t *testing.T) {
	trl := map[string]string{}
	for _, f := range trlkeys.ModelConfigFields() {
		trl[f.Name] = f.Default
	}
	m := defaultRunConfig().Model
	alpha := m.LoraAlpha
	if alpha == 0 {
		alpha = float64(2 * m.LoraR) // what train gives lora.Attach
	}
	got := map[string]any{
		"use_peft": m.UsePEFT, "lora_r": m.LoraR, "lora_alpha": alpha, "lora_target_modules": m.LoraTargetModules,
		"use_rslora": m.UseRSLoRA, "load_in_4bit": m.LoadIn4bit, "load_in_8bit": m.LoadIn8bit,
		"use_bnb_nested_quant": m.UseBnBNestedQuant, "lora_dropout": m.LoraDropout,
	}
	except := map[string]string{"lora_dropout": "0"}
	for k, v := range got {
		want, ok := trl[k]
		if !ok {
			t.Fatalf("%s is not in TRL's ModelConfig table", k)
		}
		if e, ok := except[k]; ok {
			want = e
		}
		if g := show(t, v); g != want {
			t.Errorf("grpokit train's default model.%s is %s, want %s", k, g, want)
		}
	}
}
