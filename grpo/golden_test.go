package grpo

import (
	"testing"

	"github.com/grpokit/grpokit/internal/goldentest"
	"github.com/grpokit/grpokit/internal/sharedtest"
)

// sharedDir returns ../shared, or skips the test when it is absent.
func sharedDir(t testing.TB) string { return sharedtest.Dir(t) }

// The golden readers, shared with package loss's tests.
type (
	goldenGRPO = goldentest.GRPO
	stTensor   = goldentest.Tensor
)

func loadGoldenGRPO(t testing.TB, kase string) (goldenGRPO, map[string]stTensor) {
	return goldentest.LoadGRPO(t, kase)
}

func readSafetensorsF32(path string) (map[string]stTensor, error) {
	return goldentest.ReadSafetensorsF32(path)
}

func closeTo(got, want, atol, rtol float64) bool { return goldentest.CloseTo(got, want, atol, rtol) }
