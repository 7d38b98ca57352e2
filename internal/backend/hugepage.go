package backend

// Large backend buffers are backed by transparent huge pages where the
// kernel allows it, unless GRPOKIT_HUGEPAGES=0. On a 2-core KVM guest,
// faulting in a 4 KiB page costs about 15 µs (≈ 4 CPU s per
// GiB, and again each time Go hands memory back to the OS and takes it
// again); a 2 MiB page costs ≈ 2.4 CPU s per GiB the first time the process
// touches the memory (the kernel clearing memory the host has not backed
// yet, so the page size barely matters) and ≈ 0.07 s per GiB when it
// touches it again. The first GRPO step touches the whole working set (≈ 5
// GiB for the SmolLM2-135M full fine-tuning step): with the marking,
// bench/grpostep -variant full faulted 0.47 M pages in its first step
// instead of 1.05 M and took 25-26 CPU s instead of 30-32, at the same peak
// RSS (4.76 GB both; an 11-step run held its peak flat, 4661 vs 4651 MB).
//
// Go's heap does not ask for huge pages itself (it stopped in Go 1.21.1), and
// with the common transparent_hugepage setting "madvise" the kernel gives
// them only to ranges marked with madvise(MADV_HUGEPAGE). newBuffer marks,
// before anything writes a new buffer, the whole 2 MiB pages from the start
// of the buffer's 64 MiB heap arena to the buffer's end: most activations
// are 1-8 MiB, too small to hold many whole huge pages of their own, and Go
// maps an arena from its start upwards, so the memory below a buffer in
// its arena is mapped already. The mark is a property of the mapping and Go
// never remaps heap memory it has mapped, so each range is marked once
// (hugeMarked). Nothing here changes what a buffer holds or which buffer an
// op gets: only the page size the kernel backs the memory with.
//

import (
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

const (
	// hugePageSize is the transparent huge page size on x86-64 and arm64
	// with 4 KiB base pages.
	hugePageSize = 2 << 20
	// heapArenaSize is the size and alignment of Go's heap arenas on 64-bit
	// Linux (runtime.heapArenaBytes).
	heapArenaSize = 64 << 20
	// hugeMinBuffer is the smallest buffer that newBuffer marks from.
	hugeMinBuffer = 64 << 10
)

var (
	hugeOnce   sync.Once
	hugeKernel bool // madvise is needed and allowed (see hugePagesWanted)
	hugeAsked  bool // GRPOKIT_HUGEPAGES is not 0 (hugePagesAsked)

	hugeMu     sync.Mutex
	hugeMarked = map[uintptr]struct{}{} // 2 MiB page numbers already marked
	hugeCalls  int                      // madvise calls made (tests)

	hugeOff   atomic.Bool // tests: compare with the marking off
	hugeForce atomic.Bool // tests: mark whatever GRPOKIT_HUGEPAGES says
)

// HugePagesEnvVar turns the huge-page marking of large backend buffers
// off ("0", "off" or "false"); it is on by default. See HugePages.
const HugePagesEnvVar = "GRPOKIT_HUGEPAGES"

// HugePages reports whether large backend buffers are marked for
// transparent huge pages in this process: GRPOKIT_HUGEPAGES does not turn
// them off and the kernel's transparent_hugepage setting is "madvise" (with
// "always" they get huge pages without asking, with "never" not at all).
func HugePages() bool {
	hugeOnce.Do(func() {
		hugeKernel = hugePagesWanted()
		hugeAsked = hugePagesAsked(os.Getenv(HugePagesEnvVar))
	})
	return hugeKernel && (hugeAsked || hugeForce.Load())
}

// hugePagesAsked reads GRPOKIT_HUGEPAGES: on unless "0", "off" or "false"
// (in any case, spaces around ignored).
func hugePagesAsked(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "0", "off", "false":
		return false
	}
	return true
}

// newBuffer is b.NewBuffer(s) with the buffer's whole 2 MiB pages marked for
// huge pages (see the file comment). It returns nil where NewBuffer does.
func newBuffer(b *simplego.Backend, s shapes.Shape) *simplego.Buffer {
	out := b.NewBuffer(s)
	if out == nil || s.Memory() < hugeMinBuffer || !HugePages() || hugeOff.Load() {
		return out
	}
	if flat, err := b.BufferData(out); err == nil {
		v := reflect.ValueOf(flat)
		if v.Kind() == reflect.Slice && v.Len() > 0 {
			markHuge(uintptr(v.UnsafePointer()), uintptr(v.Len())*v.Type().Elem().Size())
		}
	}
	return out
}

// markHuge marks the whole 2 MiB pages from the start of p's heap arena to
// p+n with madvise(MADV_HUGEPAGE), unless every one of them was marked
// before. [p, p+n) is memory the caller holds.
func markHuge(p, n uintptr) {
	beg := p &^ (heapArenaSize - 1)
	end := (p + n) &^ (hugePageSize - 1)
	if end <= beg {
		return
	}
	hugeMu.Lock()
	defer hugeMu.Unlock()
	done := true
	for pg := beg / hugePageSize; pg < end/hugePageSize; pg++ {
		if _, ok := hugeMarked[pg]; !ok {
			done = false
			break
		}
	}
	if done {
		return
	}
	// The mark is only a hint: a failure (ENOMEM for a hole in the range, an
	// old kernel, a seccomp filter) leaves pages small, as without the call,
	// and is not worth a second try.
	_ = adviseHuge(beg, end-beg)
	hugeCalls++
	for pg := beg / hugePageSize; pg < end/hugePageSize; pg++ {
		hugeMarked[pg] = struct{}{}
	}
}
