package backend

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"golang.org/x/sys/unix"
)

// vmaFlags returns the VmFlags of the mapping of /proc/self/smaps that
// holds address p ("" if none does).
func vmaFlags(t *testing.T, p uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0:
		case !strings.HasSuffix(fields[0], ":"): // a mapping's header: lo-hi perms ...
			lo, hi, _ := strings.Cut(fields[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uintptr(a) <= p && p < uintptr(b)
		case in && fields[0] == "VmFlags:":
			return strings.Join(fields[1:], " ")
		}
	}
	return ""
}

// forceHuge turns the marking on for the test, whatever GRPOKIT_HUGEPAGES
// says; it skips where the kernel's setting is not "madvise".
func forceHuge(t *testing.T) {
	t.Helper()
	if !hugePagesWanted() {
		t.Skip("transparent huge pages are not in madvise mode here")
	}
	hugeForce.Store(true)
	t.Cleanup(func() { hugeForce.Store(false) })
}

func f32Flat(t *testing.T, b *simplego.Backend, buf *simplego.Buffer) []float32 {
	t.Helper()
	flat, err := b.BufferData(buf)
	if err != nil {
		t.Fatal(err)
	}
	return flat.([]float32)
}

// TestNewBufferMarksHugePages checks that a large buffer's whole 2 MiB
// pages are marked for transparent huge pages ("hg" in its mapping's
// VmFlags) where the kernel's setting asks for madvise, that a second
// request for the same range makes no system call, and that marking
// memory already written leaves its values alone.
func TestNewBufferMarksHugePages(t *testing.T) {
	forceHuge(t)
	b := Must("go").(*simplego.Backend)
	buf := newBuffer(b, shapes.Make(dtypes.Float32, 3<<20)) // 12 MiB: at least 5 whole huge pages
	defer b.BufferFinalize(buf)
	flat := f32Flat(t, b, buf)
	p := uintptr(unsafe.Pointer(&flat[0]))
	inner := (p + hugePageSize - 1) &^ (hugePageSize - 1)
	if got := vmaFlags(t, inner); !slices.Contains(strings.Fields(got), "hg") {
		t.Fatalf("mapping of %#x has VmFlags %q, want hg", inner, got)
	}
	for i := range flat {
		flat[i] = float32(i)
	}
	hugeMu.Lock()
	calls := hugeCalls
	hugeMu.Unlock()
	markHuge(p, uintptr(len(flat))*4)
	hugeMu.Lock()
	again := hugeCalls
	hugeMu.Unlock()
	if again != calls {
		t.Errorf("marking a marked range made %d more madvise calls", again-calls)
	}
	// A range marked only in part (a new tail) is marked again, in one call.
	hugeMu.Lock()
	delete(hugeMarked, (p+uintptr(len(flat))*4)/hugePageSize-1)
	hugeMu.Unlock()
	markHuge(p, uintptr(len(flat))*4)
	hugeMu.Lock()
	if hugeCalls != again+1 {
		t.Errorf("re-marking a partly marked range made %d calls, want 1", hugeCalls-again)
	}
	hugeMu.Unlock()
	for i, v := range flat {
		if v != float32(i) {
			t.Fatalf("element %d = %g after marking, want %d", i, v, i)
		}
	}
}

// TestNewBufferNeverAliasesLive takes many large buffers of a few sizes
// from the pool, returning some and taking more (so that the pool hands
// freed ones out again), and checks that no buffer it hands out overlaps
// one still in use and that every live buffer keeps its own values.
func TestNewBufferNeverAliasesLive(t *testing.T) {
	hugeForce.Store(true) // whether or not the kernel allows it
	defer hugeForce.Store(false)
	b := Must("go").(*simplego.Backend)
	type live struct {
		buf  *simplego.Buffer
		flat []float32
		tag  float32
	}
	var bufs []live
	r := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1 << 20, 3 << 19, 5 << 18} // 4, 6 and 5 MiB
	for round := range 80 {
		if len(bufs) > 0 && r.IntN(3) == 0 {
			i := r.IntN(len(bufs))
			if err := b.BufferFinalize(bufs[i].buf); err != nil {
				t.Fatal(err)
			}
			bufs = slices.Delete(bufs, i, i+1)
		}
		if round%20 == 19 {
			runtime.GC() // sync.Pool drops what it holds
		}
		buf := newBuffer(b, shapes.Make(dtypes.Float32, sizes[r.IntN(len(sizes))]))
		flat := f32Flat(t, b, buf)
		lo := uintptr(unsafe.Pointer(&flat[0]))
		hi := lo + uintptr(len(flat))*4
		for _, o := range bufs {
			olo := uintptr(unsafe.Pointer(&o.flat[0]))
			if lo < olo+uintptr(len(o.flat))*4 && olo < hi {
				t.Fatalf("round %d: new buffer [%#x, %#x) overlaps a live one at %#x", round, lo, hi, olo)
			}
		}
		tag := float32(round + 1)
		for i := range flat {
			flat[i] = tag
		}
		bufs = append(bufs, live{buf, flat, tag})
		for _, o := range bufs {
			if o.flat[0] != o.tag || o.flat[len(o.flat)-1] != o.tag || o.flat[len(o.flat)/2] != o.tag {
				t.Fatalf("round %d: a live buffer lost its values (%g, want %g)", round, o.flat[0], o.tag)
			}
		}
	}
}

// TestHugePagesBitIdentical runs a graph of large products and
// element-wise ops with the marking on and off: the page size must not
// change a single bit.
func TestHugePagesBitIdentical(t *testing.T) {
	forceHuge(t)
	b := Must("go")
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 1024*1536)
	for i := range x {
		x[i] = r.Float32()*2 - 1
	}
	run := func(off bool) []float32 {
		hugeOff.Store(off)
		defer hugeOff.Store(false)
		got := graph.MustExecOnce(b, func(x *graph.Node) *graph.Node {
			y := graph.Dot(x, graph.Transpose(x, 0, 1)) // 1024×1024: 4 MiB
			return graph.Add(graph.Mul(y, y), graph.Sigmoid(y))
		}, tensors.FromFlatDataAndDimensions(x, 1024, 1536))
		return tensors.MustCopyFlatData[float32](got)
	}
	on, off := run(false), run(true)
	for i := range on {
		if on[i] != off[i] {
			t.Fatalf("element %d: %g with huge pages, %g without", i, on[i], off[i])
		}
	}
}

// BenchmarkFirstTouch writes 64 MiB of fresh anonymous memory a page at a
// time, as an op does with a new output buffer, with 4 KiB pages and with
// the range marked for huge pages. The ratio is what marking saves per
// first touch; the absolute figure depends heavily on the machine (on
// this project's VM 4 KiB faults cost ≈ 15 µs each).
func BenchmarkFirstTouch(b *testing.B) {
	const n = 64 << 20
	for _, huge := range []bool{false, true} {
		b.Run(fmt.Sprintf("huge=%v", huge), func(b *testing.B) {
			if huge && !hugePagesWanted() {
				b.Skip("transparent huge pages are not in madvise mode here")
			}
			b.SetBytes(n)
			for b.Loop() {
				mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
				if err != nil {
					b.Fatal(err)
				}
				if huge {
					if err := unix.Madvise(mem, unix.MADV_HUGEPAGE); err != nil {
						b.Fatal(err)
					}
				}
				for i := 0; i < n; i += 4096 {
					mem[i] = 1
				}
				if err := unix.Munmap(mem); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHugePagesAsked: the marking is on unless GRPOKIT_HUGEPAGES turns it
// off.
func TestHugePagesAsked(t *testing.T) {
	for v, want := range map[string]bool{
		"": true, "1": true, "on": true, "yes": true,
		"0": false, "off": false, "OFF": false, "false": false, " 0 ": false,
	} {
		if got := hugePagesAsked(v); got != want {
			t.Errorf("hugePagesAsked(%q) = %v, want %v", v, got, want)
		}
	}
}
