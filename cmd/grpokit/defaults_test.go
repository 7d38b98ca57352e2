package main

import (
	"encoding/json"
	"testing"

	"github.com/grpokit/grpokit/grpo"
)

// commandDefaults are the settings in which grpokit train's defaults
// differ from grpo.DefaultConfig() (TRL 1.10's GRPOConfig defaults), each
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
