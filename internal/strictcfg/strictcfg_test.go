package strictcfg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Rank  int    `json:"lora_r"`
	Names []item `json:"rewards"`
}

type item struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
}

type dur time.Duration

func (d *dur) UnmarshalJSON(b []byte) error {
	v, err := time.ParseDuration(strings.Trim(string(b), `"`))
	*d = dur(v)
	return err
}

type base struct {
	Seed int64 `json:"seed"`
}

type cfg struct {
	base
	LearningRate float64 `json:"learning_rate"`
	MaxSteps     int     `json:"max_steps"`
	Limit        dur     `json:"time_limit"`
	Model        *inner  `json:"model"`
	Hidden       string  `json:"-"`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // substrings of the error; none: success
	}{
		{"ok", `{"learning_rate": 0.1, "seed": 3, "time_limit": "2m", "model": {"lora_r": 4, "rewards": [{"name": "x", "weight": 1}]}}`, nil},
		{"typo", `{"lerning_rate": 0.1}`, []string{`unknown key "lerning_rate" (did you mean "learning_rate"?)`}},
		{"nested typo", `{"model": {"lora_rank": 4}}`, []string{`unknown key "model.lora_rank" (did you mean "model.lora_r"?)`}},
		{"in a list", `{"model": {"rewards": [{"name": "x", "wieght": 1}]}}`, []string{`unknown key "model.rewards.0.wieght" (did you mean "model.rewards.0.weight"?)`}},
		{"far from everything", `{"zzzzzzzzzz": 1}`, []string{`unknown key "zzzzzzzzzz"`}},
		{"two at once", `{"steps": 1, "Hidden": "x"}`, []string{`unknown key "Hidden"`, `unknown key "steps" (did you mean "max_steps"?)`}},
		{"case matters", `{"Learning_Rate": 1}`, []string{`unknown key "Learning_Rate" (did you mean "learning_rate"?)`}},
		{"type", `{"max_steps": "ten"}`, []string{`key "max_steps": got a string, want a whole number`}},
		{"type in an embedded struct", `{"seed": "x"}`, []string{`key "seed": got a string, want a whole number`}},
		{"type of a float", `{"learning_rate": "fast"}`, []string{`key "learning_rate": got a string, want a number`}},
		{"type in a list", `{"model": {"rewards": [{"weight": true}]}}`, []string{`key "model.rewards.weight": got a bool, want a number`}},
		{"not JSON", `{`, []string{"invalid JSON"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg{MaxSteps: 7}
			err := Decode([]byte(tc.in), &c)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if c.LearningRate != 0.1 || c.Seed != 3 || c.MaxSteps != 7 || c.Limit != dur(2*time.Minute) || c.Model.Rank != 4 {
					t.Errorf("decoded %+v", c)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestDecodeFileYAML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.yaml")
	yml := "learning_rate: 0.1\nseed: 3\ntime_limit: 2m\nmodel:\n  lora_r: 4\n  rewards:\n    - name: x\n      weight: 1\n"
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	var c cfg
	if err := DecodeFile(path, &c); err != nil {
		t.Fatal(err)
	}
	if c.LearningRate != 0.1 || c.Model.Rank != 4 || c.Model.Names[0].Weight != 1 || c.Limit != dur(2*time.Minute) {
		t.Errorf("decoded %+v", c)
	}
	if err := os.WriteFile(path, []byte("learning_rat: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := DecodeFile(path, &c); err == nil || !strings.Contains(err.Error(), `did you mean "learning_rate"`) {
		t.Errorf("YAML typo: %v", err)
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"num_generations", "max_steps", "learning_rate", "beta"}
	for in, want := range map[string]string{"num_generation": "num_generations", "max_step": "max_steps", "bet": "beta", "epochs": "", "temperature": "", "generations": "num_generations"} {
		if got := Suggest(in, known); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExpandHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, c := range []struct{ in, want string }{
		{"~", home},
		{"~/models/qwen", filepath.Join(home, "models", "qwen")},
		{"~user/x", "~user/x"}, // another user's home: left to the OS
		{"runs/~x", "runs/~x"},
		{"/abs/path", "/abs/path"},
		{"", ""},
	} {
		if got := ExpandHome(c.in); got != c.want {
			t.Errorf("ExpandHome(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
