// Package sharedtest finds the fixtures that tests read from ../shared
// (seen from the repository root: golden checkpoints, tokenizer references,
// data sets). Tests skip with a message when they are absent, except where
// GRPOKIT_REQUIRE_SHARED=1 (CI sets it), where a missing fixture fails the
// test so that a golden test can never pass by skipping.
package sharedtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// RequireEnv is the environment variable that turns a missing fixture from
// a skip into a failure.
const RequireEnv = "GRPOKIT_REQUIRE_SHARED"

// Find returns the path of ../shared/sub... from the directory holding
// go.mod above the working directory, or an error saying where it looked.
func Find(sub ...string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("sharedtest: no go.mod above the working directory")
		}
		dir = parent
	}
	path := filepath.Join(append([]string{dir, "..", "shared"}, sub...)...)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("sharedtest: fixtures not found at %s (../shared from the repository root; tests never download)", path)
	}
	return path, nil
}

// Dir returns ../shared/sub... or, when it is absent, skips t (fails it
// when GRPOKIT_REQUIRE_SHARED=1).
func Dir(t testing.TB, sub ...string) string {
	t.Helper()
	path, err := Find(sub...)
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return path
}
