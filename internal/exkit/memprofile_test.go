package exkit

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestPeakProfile: the heap profile is written once the live heap grows,
// and holds the allocation that made it grow.
func TestPeakProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.pprof")
	p := startPeakProfile(path, 5*time.Millisecond)
	hold := make([]byte, 64<<20)
	for i := range hold {
		hold[i] = byte(i)
	}
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(hold)
	st, err := os.Stat(path)
	if err != nil || st.Size() == 0 {
		t.Fatalf("profile %v, %v: want a written file", st, err)
	}
	if p.peak < 64<<20 {
		t.Errorf("peak %d B, want the 64 MiB held", p.peak)
	}
}
