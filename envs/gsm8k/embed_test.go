package gsm8k

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/internal/sharedtest"
)

// TestShipped checks the embedded splits: counts and first problems from
// the GSM8K repository,
// the uncompressed bytes' SHA-256 recorded in data/SOURCE.md (that of the
// upstream files) and, where ../shared is present, equality with the shared copy.
func TestShipped(t *testing.T) {
	tests := []struct {
		name     string
		load     func() ([]Example, error)
		n        int
		gold     string
		question string
		sha      string
	}{
		{"train", Train, 7473, "72", "Natalia sold clips", "17f347dc51477c50d4efb83959dbb7c56297aba886e5544ee2aaed3024813465"},
		{"test", Test, 1319, "18", "Janet’s ducks lay 16 eggs", "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14"},
	}
	source, err := os.ReadFile(filepath.Join("data", "SOURCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			exs, err := tc.load()
			if err != nil {
				t.Fatal(err)
			}
			if len(exs) != tc.n || exs[0].Answer != tc.gold || !strings.HasPrefix(exs[0].Question, tc.question) {
				t.Errorf("%d examples, first %+v", len(exs), exs[0])
			}
			if !strings.Contains(string(source), tc.sha) {
				t.Errorf("data/SOURCE.md does not record %s", tc.sha)
			}
			raw, err := shippedBytes(tc.name + ".jsonl")
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != tc.sha {
				t.Errorf("shipped %s.jsonl has SHA-256 %x, want %s", tc.name, sum, tc.sha)
			}
			if dir, err := sharedtest.Find("data", "gsm8k"); err == nil {
				shared, err := Load(filepath.Join(dir, tc.name+".jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				if len(shared) != len(exs) || shared[len(shared)-1] != exs[len(exs)-1] {
					t.Errorf("shipped %s differs from the shared copy", tc.name)
				}
			}
		})
	}
}
