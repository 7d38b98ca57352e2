package exkit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/grpo"
)

// fakeCheckpoint writes a checkpoint folder that LatestCheckpoint accepts:
// a trainer state, a variables file and the manifest sealing them.
func fakeCheckpoint(t *testing.T, dir string, step int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	state, _ := json.Marshal(map[string]any{"format": 1, "step": step, "num_tokens": 0, "config": grpo.DefaultConfig()})
	files := map[string][]byte{"trainer_state.json": state, "variables.gob": []byte("weights")}
	var entries []map[string]any
	for _, name := range []string{"trainer_state.json", "variables.gob"} {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(files[name])
		entries = append(entries, map[string]any{"path": name, "size": len(files[name]), "sha256": hex.EncodeToString(sum[:])})
	}
	m, _ := json.Marshal(map[string]any{"format": 1, "files": entries})
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), m, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		resume  bool
		steps   []int
		broken  bool // add a checkpoint-7 without a manifest (a crash mid-write)
		want    string
		wantErr string
	}{
		{"no -resume", false, []int{5}, true, "", ""},
		{"-resume, nothing saved yet", true, nil, false, "", ""},
		{"-resume, only a broken checkpoint", true, nil, true, "", "checkpoint-7"},
		{"-resume picks the highest step", true, []int{5, 40, 9}, false, "checkpoint-40", ""},
		{"-resume passes over a half-written checkpoint", true, []int{5}, true, "checkpoint-5", ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, string(rune('a'+i)))
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.steps {
				fakeCheckpoint(t, filepath.Join(out, "checkpoint-"+itoa(s)), s)
			}
			if tt.broken {
				if err := os.MkdirAll(filepath.Join(out, "checkpoint-7"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			c := Config{Out: out, Resume: tt.resume}
			got, err := c.Checkpoint()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Checkpoint() = %q, %v; want an error naming %s", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != "" {
				tt.want = filepath.Join(out, tt.want)
			}
			if got != tt.want {
				t.Errorf("Checkpoint() = %q, want %q", got, tt.want)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
