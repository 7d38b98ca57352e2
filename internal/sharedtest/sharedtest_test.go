package sharedtest

import (
	"os"
	"strings"
	"testing"
)

// TestFixturesPresent is the one place a run without ../shared says so:
// the tests that need a fixture skip, and go test ./... hides skips in
// passing packages.
func TestFixturesPresent(t *testing.T) {
	var missing []string
	for _, sub := range fixtures {
		if _, err := Find(sub); err != nil {
			missing = append(missing, err.Error())
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := strings.Join(missing, "\n") + "\n" + Help
	if os.Getenv(SkipEnv) == "1" && os.Getenv(RequireEnv) != "1" {
		t.Skip(msg)
	}
	t.Fatal(msg)
}

func TestFind(t *testing.T) {
	if _, err := Find("no-such-fixture-dir"); err == nil || !strings.Contains(err.Error(), "no-such-fixture-dir") {
		t.Errorf("Find(missing) error = %v, want one naming the path", err)
	}
	dir := Dir(t, "golden")
	if !strings.HasSuffix(dir, "golden") {
		t.Errorf("Dir = %q", dir)
	}
}
