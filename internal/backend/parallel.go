package backend

// SimpleGo runs each op, but for DotGeneral, on one goroutine: on 2 cores
// every element-wise op, transpose and reduction left one core idle when
// ops ran one at a time (independent ops now also run side by side, see
// DefaultGo). The
// executors of the element-wise hook split ops above a size threshold
// across GOMAXPROCS goroutines with parallelFor. Each output element is
// still computed by one goroutine with the same operations in the same
// order, so results do not depend on the split.

import (
	"runtime"

	"github.com/grpokit/grpokit/internal/fork"
)

var (
	// parallelMinWork is the number of elements (read plus written) an op
	// must touch before it is split: below it the hand-off to fork's
	// helpers (a microsecond or two while they linger) costs more than it
	// saves.
	parallelMinWork = 1 << 14
	// parallelThreads, when > 0, replaces GOMAXPROCS (tests).
	parallelThreads = 0
)

// parallelFor calls f on disjoint chunks [lo, hi) that cover [0, n):
// concurrently on up to GOMAXPROCS goroutines (the caller's among them)
// when the op touches at least parallelMinWork elements per goroutine,
// else once on the caller. Chunk bounds but the last are multiples of
// align (keep SIMD loops on whole registers). It returns when all chunks
// are done.
func parallelFor(n, work, align int, f func(lo, hi int)) {
	nt := parallelThreads
	if nt <= 0 {
		nt = runtime.GOMAXPROCS(0)
	}
	nt = min(nt, work/parallelMinWork, n)
	if nt <= 1 {
		f(0, n)
		return
	}
	chunk := (n + nt - 1) / nt
	chunk = (chunk + align - 1) / align * align
	fork.Run((n+chunk-1)/chunk, func(t int) { f(t*chunk, min((t+1)*chunk, n)) })
}
