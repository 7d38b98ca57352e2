package backend

// An op trace for measurements: which op of the "go" backend ran when, and
// how much process CPU time passed while it ran. On 2 cores an op whose
// CPU time is less than twice its wall time left a core idle for the
// difference; the trace tells which ops do (bench/grpostep -opstats).
// Tracing costs two clock reads and a lock per op, so it is off unless a
// program asks for it before it makes its first "go" backend.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
)

// OpEvent is one op run while the trace was on. Start and End are
// wall-clock instants; CPUStart and CPUEnd the process's CPU time (all
// threads) at those instants.
type OpEvent struct {
	Op               string // op type, "Fused…" for fused chains
	Elems            int    // elements of the output
	Start, End       time.Time
	CPUStart, CPUEnd time.Duration
}

var (
	opTraceWanted atomic.Bool // EnableOpTrace was called
	opTraceOn     atomic.Bool
	opTraceMu     sync.Mutex
	opTraceEvents []OpEvent
)

// EnableOpTrace makes the "go" backends made after it record op events
// while StartOpTrace is in effect. Call it before the first New of a "go"
// backend; it returns an error if one was already made (its executors are
// then in place untraced) or if the process CPU clock cannot be read.
func EnableOpTrace() error {
	if _, err := processCPU(); err != nil {
		return fmt.Errorf("backend: op trace: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for config := range cache {
		if IsGo(cache[config]) {
			return fmt.Errorf("backend: op trace: enable it before the first go backend is made (%q exists)", config)
		}
	}
	opTraceWanted.Store(true)
	return nil
}

// StartOpTrace starts recording (dropping earlier events).
func StartOpTrace() {
	opTraceMu.Lock()
	opTraceEvents = opTraceEvents[:0]
	opTraceMu.Unlock()
	opTraceOn.Store(true)
}

// StopOpTrace stops recording and returns the events since StartOpTrace in
// the order the ops ended.
func StopOpTrace() []OpEvent {
	opTraceOn.Store(false)
	opTraceMu.Lock()
	defer opTraceMu.Unlock()
	return append([]OpEvent(nil), opTraceEvents...)
}

// installOpTrace wraps every executor in place (after the hooks) with a
// recorder; New calls it once when EnableOpTrace was called.
var opTraceOnce sync.Once

func installOpTrace() {
	if !opTraceWanted.Load() {
		return
	}
	opTraceOnce.Do(func() {
		for op, exec := range nodeExecutors {
			if exec == nil {
				continue
			}
			name := backends.OpType(op).String()
			nodeExecutors[op] = func(b *simplego.Backend, n *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
				if !opTraceOn.Load() {
					return exec(b, n, inputs, owned)
				}
				c0, _ := processCPU()
				t0 := time.Now()
				out, err := exec(b, n, inputs, owned)
				t1 := time.Now()
				c1, _ := processCPU()
				ev := OpEvent{Op: name, Start: t0, End: t1, CPUStart: c0, CPUEnd: c1}
				if fastOpsErr.Load() == nil && ewDataOff != 0 {
					if mk, ok := nodeData(n).(*fusedMark); ok {
						ev.Op = fmt.Sprintf("Fused%d", mk.kind)
						if int(mk.kind) < len(fusedNames) {
							ev.Op = "Fused" + fusedNames[mk.kind]
						}
					}
				}
				if out != nil {
					if s, err := b.BufferShape(out); err == nil {
						ev.Elems = s.Size()
					}
				}
				opTraceMu.Lock()
				opTraceEvents = append(opTraceEvents, ev)
				opTraceMu.Unlock()
				return out, err
			}
		}
	})
}

var fusedNames = [...]string{FusedSwiGLU: "SwiGLU", FusedSiLUGrad: "SiLUGrad", FusedSoftmax: "Softmax",
	FusedSoftmaxGrad: "SoftmaxGrad", FusedRMSNorm: "RMSNorm", FusedRMSNormGrad: "RMSNormGrad",
	FusedRMSNormScale: "RMSNormScale", FusedRoPE: "RoPE"}
