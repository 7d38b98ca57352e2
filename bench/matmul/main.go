// Command matmul measures grpokit's float32 matrix products on the pure-Go
// backend and prints them beside PyTorch's numbers for the same shapes.
//
//	go run ./bench/matmul [-torch torch.json] [-time 1s]
//
// bench/run.sh runs bench/torch_matmul.py first and passes its JSON with
// -torch. Each shape is timed through a compiled GoMLX graph on the "go"
// backend (what the library runs) and through internal/gemm directly; the
// table gives the best of repeated calls (the machine is shared: the best
// is the least disturbed).
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/grpokit/grpokit/bench/internal/torchref"
	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/internal/gemm"
)

// shape is one product; names and layouts match bench/torch_matmul.py.
type shape struct {
	name      string
	batch     int
	m, k, n   int
	aT, bT    bool // A stored [k, m] / B stored [n, k]
	lhs, rhs  []int
	contL, bL []int
	contR, bR []int
}

func shapes() []shape {
	mk := func(name string, m, k, n int, bT bool) shape {
		s := shape{name: name, batch: 1, m: m, k: k, n: n, bT: bT, lhs: []int{m, k}, contL: []int{1}}
		if bT {
			s.rhs, s.contR = []int{n, k}, []int{1}
		} else {
			s.rhs, s.contR = []int{k, n}, []int{0}
		}
		return s
	}
	return []shape{
		mk("256x576 · 576x1536", 256, 576, 1536, false),
		mk("1024x576 · 576x1536", 1024, 576, 1536, false),
		mk("8x576 · 576x1536 (decode)", 8, 576, 1536, false),
		mk("1024x576 · 576x49152 (LM head)", 1024, 576, 49152, false),
		mk("256x576 · (1536x576)ᵀ", 256, 576, 1536, true),
		mk("8x576 · (1536x576)ᵀ (decode)", 8, 576, 1536, true),
		mk("1024x576 · (49152x576)ᵀ (LM head)", 1024, 576, 49152, true),
		{name: "(1440x576)ᵀ · 1440x1536 (weight grad)", batch: 1, m: 576, k: 1440, n: 1536, aT: true,
			lhs: []int{1440, 576}, contL: []int{0}, rhs: []int{1440, 1536}, contR: []int{0}},
		{name: "144x90x64 · (144x90x64)ᵀ (attention)", batch: 144, m: 90, k: 64, n: 90, bT: true,
			lhs: []int{144, 90, 64}, contL: []int{2}, bL: []int{0}, rhs: []int{144, 90, 64}, contR: []int{2}, bR: []int{0}},
	}
}

func main() {
	torchFile := flag.String("torch", "", "JSON written by bench/torch_matmul.py (optional)")
	minTime := flag.Duration("time", time.Second, "minimum time per shape and method")
	only := flag.String("only", "", "run only the shape with this name")
	flag.Parse()
	torch, torchInfo, err := torchref.Load(*torchFile, "gflops")
	if err != nil {
		log.Fatalf("matmul: %v", err)
	}
	b, err := backend.New("")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("grpokit matmul benchmark: %s, GOMAXPROCS=%d, backend %q, gemm kernel %v (hook: %v)\n",
		cpuModel(), runtime.GOMAXPROCS(0), backend.Resolve(""), gemm.Active(), errOr(backend.FastDotGeneral(), "on"))
	if torchInfo != "" {
		fmt.Printf("PyTorch: %s\n", torchInfo)
	}
	fmt.Printf("GFLOP/s, best of repeated calls (higher is better)\n\n")
	fmt.Printf("| %-40s | %9s | %9s | %9s | %7s |\n", "shape (f32)", "go graph", "gemm", "PyTorch", "ratio")
	fmt.Printf("|%s|%s|%s|%s|%s|\n", dashes(42), dashes(11), dashes(11), dashes(11), dashes(9))
	for _, s := range shapes() {
		if *only != "" && s.name != *only {
			continue
		}
		g := graphGFlops(b, s, *minTime)
		d := gemmGFlops(s, *minTime)
		t, ratio := "-", "-"
		if v, ok := torch[s.name]; ok && v > 0 {
			t, ratio = fmt.Sprintf("%.1f", v), fmt.Sprintf("%.2f×", g/v)
		}
		fmt.Printf("| %-40s | %9.1f | %9.1f | %9s | %7s |\n", s.name, g, d, t, ratio)
	}
	fmt.Printf("\nratio = go graph / PyTorch.\n")
}

func errOr(err error, ok string) string {
	if err != nil {
		return err.Error()
	}
	return ok
}

func dashes(n int) string { return string(slices.Repeat([]byte{'-'}, n)) }

func flops(s shape) float64 { return 2 * float64(s.batch) * float64(s.m) * float64(s.n) * float64(s.k) }

// timeIt calls f until minTime has passed (at least 5 times, after 2 warm-up
// calls) and returns the GFLOP/s of the fastest call.
func timeIt(fl float64, minTime time.Duration, f func()) float64 {
	f()
	f()
	var times []float64
	start := time.Now()
	for len(times) < 5 || time.Since(start) < minTime {
		t0 := time.Now()
		f()
		times = append(times, time.Since(t0).Seconds())
	}
	slices.Sort(times)
	return fl / times[0] / 1e9
}

func random(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i%13)*0.01 - 0.06
	}
	return v
}

func size(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

func graphGFlops(b backends.Backend, s shape, minTime time.Duration) float64 {
	exec := graph.MustNewExec(b, func(x, y *graph.Node) *graph.Node {
		return graph.DotGeneral(x, s.contL, s.bL, y, s.contR, s.bR)
	})
	x := tensors.FromFlatDataAndDimensions(random(size(s.lhs)), s.lhs...)
	y := tensors.FromFlatDataAndDimensions(random(size(s.rhs)), s.rhs...)
	return timeIt(flops(s), minTime, func() {
		out := exec.MustExec(x, y)
		for _, o := range out {
			o.FinalizeAll()
		}
	})
}

func gemmGFlops(s shape, minTime time.Duration) float64 {
	a := gemm.Mat{Data: random(size(s.lhs)), BS: s.m * s.k, RS: s.k, CS: 1}
	if s.aT {
		a.RS, a.CS = 1, s.m
	}
	bm := gemm.Mat{Data: random(size(s.rhs)), BS: s.k * s.n, RS: s.n, CS: 1}
	if s.bT {
		bm.RS, bm.CS = 1, s.k
	}
	c := make([]float32, s.batch*s.m*s.n)
	return timeIt(flops(s), minTime, func() { gemm.Gemm(s.batch, s.m, s.n, s.k, a, bm, c) })
}

func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range slices.Collect(func(yield func(string) bool) {
		start := 0
		for i, c := range raw {
			if c == '\n' {
				if !yield(string(raw[start:i])) {
					return
				}
				start = i + 1
			}
		}
	}) {
		if len(line) > 10 && line[:10] == "model name" {
			for i := range line {
				if line[i] == ':' {
					return line[i+2:]
				}
			}
		}
	}
	return runtime.GOARCH
}
