package exkit

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		resume bool
		dirs   []string
		want   string
	}{
		{"no -resume", false, []string{"checkpoint-5"}, ""},
		{"-resume, nothing complete saved yet", true, nil, ""},
		{"-resume picks the highest step", true, []string{"checkpoint-5", "checkpoint-40", "checkpoint-9"}, "checkpoint-40"},
		{"-resume ignores a half-written checkpoint", true, []string{"checkpoint-5"}, "checkpoint-5"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, string(rune('a'+i)))
			for _, d := range tt.dirs {
				// A checkpoint counts once its trainer_state.json is there.
				if err := os.MkdirAll(filepath.Join(out, d), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(out, d, "trainer_state.json"), []byte("{}"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(filepath.Join(out, "checkpoint-7"), 0o755); err != nil { // no state file
				t.Fatal(err)
			}
			c := Config{Out: out, Resume: tt.resume}
			got, err := c.Checkpoint()
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
