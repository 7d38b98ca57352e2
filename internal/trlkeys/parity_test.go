package trlkeys_test

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/strictcfg"
	"github.com/grpokit/grpokit/internal/trlkeys"
)

// parityExceptions are TRL 1.16 GRPOConfig fields whose default here is
// not TRL's, each with the reason. Every other field must have TRL's
// default: in grpo.DefaultConfig() when it is a Config setting, else in
// the answer trlkeys gives for it.
var parityExceptions = map[string]string{
	"bf16": "the compute dtype is the model's (model.Options.Compute); grpokit train computes in bfloat16 by default on XLA " +
		"as TRL does, and in float32 on the pure-Go backend, where bfloat16 is about 10x slower",
}

// unsetIsZero are the fields whose TRL default None ("not set") is the Go
// zero value here, documented as the same meaning on the Config field.
var unsetIsZero = map[string]bool{
	"output_dir": true, "epsilon_high": true, "eval_steps": true, "generation_batch_size": true, "min_p": true,
	"num_generations_eval": true, "save_total_limit": true, "steps_per_generation": true,
	"max_steps":                   true, // TRL's -1: no limit; grpokit's 0
	"max_tool_calling_iterations": true, // TRL's None and grpokit's 0: no bound
}

// TestTRLDefaultsParity compares TRL 1.16's GRPOConfig fields and
// defaults (testdata, introspected from the installed TRL by internal/trlref/keys.py) with grpo.DefaultConfig()
// and trlkeys' answers: a field with another default, or with no answer,
// fails unless parityExceptions says why.
func TestTRLDefaultsParity(t *testing.T) {
	ours := defaults(t)
	fields := strictcfg.Fields(reflect.TypeFor[grpo.Config]())
	trl := readKeys(t, false)
	keys := make([]string, 0, len(trl))
	for k := range trl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := show(t, trl[k])
		var got string
		if _, ok := fields[k]; ok {
			got = show(t, ours[k])
		} else if def, ok := trlkeys.Default(k); ok {
			got = show(t, decode(t, def))
		} else {
			got = "(no answer)"
		}
		if unsetIsZero[k] && (want == "null" || want == "-1") && (got == "0" || got == `""`) {
			continue
		}
		if got == want {
			if why, ok := parityExceptions[k]; ok {
				t.Errorf("%s: default %s is TRL's now; drop the exception %q", k, got, why)
			}
			continue
		}
		if _, ok := parityExceptions[k]; ok {
			continue
		}
		t.Errorf("TRL 1.16's %s: default %s, grpokit's %s", k, want, got)
	}
}

// defaults returns grpo.DefaultConfig() as JSON values by key.
func defaults(t *testing.T) map[string]any {
	t.Helper()
	raw, err := json.Marshal(grpo.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var ours map[string]any
	if err := json.Unmarshal(raw, &ours); err != nil {
		t.Fatal(err)
	}
	return ours
}

// decode reads one JSON literal, numbers as json.Number.
func decode(t *testing.T, lit string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(lit), &v); err != nil {
		t.Fatalf("%s: %v", lit, err)
	}
	return v
}

// show renders a JSON value canonically (numbers as float64, so 1e-6 and
// 0.000001, 240 and 240.0 compare equal).
func show(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(x)
	return string(b)
}
