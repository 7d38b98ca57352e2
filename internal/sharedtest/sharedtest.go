// Package sharedtest finds the fixtures that tests read from ../shared
// (seen from the repository root: golden checkpoints, tokenizer references,
// data sets; docs/testing.md says what they are and where they come from).
//
// Without them a test that needs one skips, naming the path it looked at.
// Because `go test ./...` hides the output of passing packages, one test of
// this package (TestFixturesPresent) fails instead, once for the whole run,
// and says which tests skip and where the fixtures come from; set
// GRPOKIT_SKIP_SHARED=1 to accept running without them. Where
// GRPOKIT_REQUIRE_SHARED=1 (CI sets it) every missing fixture fails its
// test, so that a golden test can never pass by skipping.
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

// SkipEnv is the environment variable that accepts a run without the
// fixtures: TestFixturesPresent then skips instead of failing (RequireEnv
// wins over it).
const SkipEnv = "GRPOKIT_SKIP_SHARED"

// fixtures are the folders of ../shared that the tests read.
var fixtures = []string{"golden", "tokenizers", "data"}

// Help says what skips without the fixtures and where they come from.
const Help = `The golden-reference tests of model, lora, loss, grpo, tokenizer,
envs/gsm8k, cmd/grpokit and the examples' scaffolding skip without them.
The fixtures are the project's shared fixture folder (tiny Hugging Face
checkpoints with transformers' and TRL's reference numbers, tokenizer files
with the Rust library's ids, GSM8K and Wordle data), kept beside the
checkout at ../shared, never downloaded by a test: see docs/testing.md.
Set ` + SkipEnv + `=1 to run the other tests without this failure; CI sets
` + RequireEnv + `=1, where any missing fixture fails.`

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
		return "", fmt.Errorf("sharedtest: fixtures not found at %s (../shared from the repository root; see docs/testing.md)", path)
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
