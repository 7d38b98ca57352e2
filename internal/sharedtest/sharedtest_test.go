package sharedtest

import (
	"os"
	"strings"
	"testing"
)

// TestFixturesPresent is the one place a run without ../shared says, in
// one message, which tests skip and where the fixtures come from (go test
// -v shows it; go test ./... hides the skips of passing packages, and a
// fresh clone's test run must still pass). Under GRPOKIT_REQUIRE_SHARED=1
// (CI) it fails instead.
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
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
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
