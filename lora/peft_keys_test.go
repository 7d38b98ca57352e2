package lora

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/internal/trlkeys"
)

// Every field of peft's LoraConfig (introspected from peft 0.21.2) has an
// answer in peftKeys, and every answer is a LoraConfig field; the read
// ones are those peftConfig decodes.
func TestEveryLoraConfigFieldAnswered(t *testing.T) {
	fields := map[string]bool{}
	for _, f := range trlkeys.LoraConfigFields() {
		fields[f.Name] = true
		if _, ok := peftKeys[f.Name]; !ok {
			t.Errorf("peft's LoraConfig field %q has no answer", f.Name)
		}
	}
	for k := range peftKeys {
		if !fields[k] {
			t.Errorf("answer for %q, which peft's LoraConfig does not have", k)
		}
	}
}

// checkPEFTKeys accepts peft's defaults and inert keys, refuses what Load
// cannot honour.
func TestCheckPEFTKeys(t *testing.T) {
	for _, tc := range []struct{ json, err string }{
		{`{"r": 4, "rank_pattern": {}, "alpha_pattern": {}, "modules_to_save": null, "qalora_group_size": 16, "lora_bias": false}`, ""},
		{`{"layers_to_transform": [0], "init_lora_weights": "gaussian", "peft_version": "0.21.2", "runtime_config": {"ephemeral_gpu_offload": true}}`, ""},
		{`{"future_peft_key": 1}`, ""},
		{`{"rank_pattern": {"q_proj": 8}}`, "per-module ranks are not supported"},
		{`{"alpha_pattern": {"v_proj": 32}}`, "per-module alphas"},
		{`{"modules_to_save": ["lm_head"]}`, "whole modules"},
		{`{"target_parameters": ["experts.w1"]}`, "target_parameters"},
	} {
		errs := checkPEFTKeys([]byte(tc.json))
		got := ""
		for _, e := range errs {
			got += e.Error() + "; "
		}
		if (tc.err == "") != (len(errs) == 0) || !strings.Contains(got, tc.err) {
			t.Errorf("%s: %q, want %q", tc.json, got, tc.err)
		}
	}
}

// The shared golden adapter_config.json (written by peft) passes.
func TestGoldenAdapterConfigKeys(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(goldenDir(t, "llama-tiny"), "lora", "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if errs := checkPEFTKeys(data); len(errs) > 0 {
		t.Error(errs)
	}
}
