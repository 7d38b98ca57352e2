package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/grpokit/grpokit/internal/sharedtest"
)

func TestChatTemplateReferenceCases(t *testing.T) {
	dir := sharedtest.Dir(t, "tokenizers")
	var cases []struct {
		Name     string          `json:"name"`
		Template string          `json:"template"`
		Ctx      json.RawMessage `json:"ctx"`
	}
	var ref []string
	b, err := os.ReadFile(filepath.Join(dir, "tpl_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if err := readJSON(filepath.Join(dir, "tpl_ref.json"), &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref) != len(cases) {
		t.Fatalf("%d cases, %d references", len(cases), len(ref))
	}
	pass := 0
	for i, c := range cases {
		ct, err := NewChatTemplate(c.Template)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		got, err := ct.RenderJSON(c.Ctx)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		if got != ref[i] {
			t.Errorf("%s:\n got %q\nwant %q", c.Name, got, ref[i])
			continue
		}
		pass++
	}
	t.Logf("%d/%d template cases match byte for byte", pass, len(cases))
}
