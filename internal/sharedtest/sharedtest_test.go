package sharedtest

import (
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	if _, err := Find("no-such-fixture-dir"); err == nil || !strings.Contains(err.Error(), "no-such-fixture-dir") {
		t.Errorf("Find(missing) error = %v, want one naming the path", err)
	}
	dir := Dir(t, "golden")
	if !strings.HasSuffix(dir, "golden") {
		t.Errorf("Dir = %q", dir)
	}
}
