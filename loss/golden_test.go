package loss

import (
	"testing"

	"github.com/grpokit/grpokit/internal/goldentest"
)

// The golden readers, shared with package grpo's tests.
type (
	goldenGRPO = goldentest.GRPO
	stTensor   = goldentest.Tensor
)

func loadGoldenGRPO(t testing.TB, kase string) (goldenGRPO, map[string]stTensor) {
	return goldentest.LoadGRPO(t, kase)
}

func closeTo(got, want, atol, rtol float64) bool { return goldentest.CloseTo(got, want, atol, rtol) }
