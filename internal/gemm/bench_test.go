package gemm

import (
	"flag"
	"testing"
)

// benchThreads sets the goroutines per Gemm call in benchmarks
// (-gemm.threads 1 gives figures less disturbed by a shared machine).
var benchThreads = flag.Int("gemm.threads", 0, "goroutines per Gemm call in benchmarks (0: GOMAXPROCS)")

// Blocking overrides for tuning experiments (0 keeps the default;
// -gemm.inplace -1 always packs B, 1 keeps the default rule).
var (
	benchKC      = flag.Int("gemm.kc", 0, "kcMax in benchmarks (0: default)")
	benchMC      = flag.Int("gemm.mc", 0, "mcMax in benchmarks (0: default)")
	benchNC      = flag.Int("gemm.nc", 0, "ncMax in benchmarks (0: default)")
	benchInPlace = flag.Int("gemm.inplace", 0, "-1: always pack B in benchmarks")
)

// setBlocking applies the overrides and returns a func restoring the defaults.
func setBlocking(kc, mc, nc, inPlace int) func() {
	okc, omc, onc, or, os := kcMax, mcMax, ncMax, inPlaceMaxRows, inPlaceMaxStride
	if kc > 0 {
		kcMax = kc
	}
	if mc > 0 {
		mcMax = mc
	}
	if nc > 0 {
		ncMax = nc
	}
	if inPlace < 0 {
		inPlaceMaxRows, inPlaceMaxStride = 0, 0
	}
	return func() { kcMax, mcMax, ncMax, inPlaceMaxRows, inPlaceMaxStride = okc, omc, onc, or, os }
}

// BenchmarkKernel is the largest micro-kernel alone on packed panels that
// stay in L1: the ceiling the blocking can approach.
func BenchmarkKernel(b *testing.B) {
	kern := kernels.Load()
	kc := 256
	if *benchKC > 0 {
		kc = *benchKC
	}
	ap := make([]float32, kern.mr*kc)
	bp := make([]float32, kern.nr*kc)
	c := make([]float32, kern.mr*kern.nr)
	f := kern.rows[kern.mr]
	cpu0 := cpuSeconds()
	for b.Loop() {
		f(kc, &ap[0], &bp[0], kern.nr, &c[0], kern.nr, 1)
	}
	report(b, 2*float64(kern.mr*kern.nr*kc), cpuSeconds()-cpu0)
}

// benchDot sets dotMaxRows in benchmarks (-gemm.dot 0 turns the
// dot-product path off, for A/B comparisons); negative keeps the default.
var benchDot = flag.Int("gemm.dot", -1, "most rows of A for the dot-product path in benchmarks (-1: default)")

// benchShapes are the shapes: MLP-sized, prefill, decode, LM head.
var benchShapes = []struct {
	name    string
	m, k, n int
}{
	{"256x576x1536", 256, 576, 1536},
	{"1024x576x1536", 1024, 576, 1536},
	{"decode8x576x1536", 8, 576, 1536},
	{"lmhead1024x576x49152", 1024, 576, 49152},
}

// BenchmarkGemmDecode is one KV-cache decode step's products at batch 8 in
// the model's layout x·Wᵀ (W stored [out, in]): MLP up, MLP down, LM head.
func BenchmarkGemmDecode(b *testing.B) {
	for _, s := range []struct {
		name    string
		m, k, n int
	}{{"8x576x1536", 8, 576, 1536}, {"8x1536x576", 8, 1536, 576}, {"8x576x49152", 8, 576, 49152}, {"1x576x576", 1, 576, 576},
		{"16x576x1536", 16, 576, 1536}, {"32x576x1536", 32, 576, 1536}, {"64x576x1536", 64, 576, 1536}} {
		b.Run(s.name, func(b *testing.B) { benchOne(b, 1, s.m, s.n, s.k, false, true) })
	}
}

// BenchmarkGemm reports GFLOP/s for each shape with B row-major (NN) and
// transposed (NT: x·Wᵀ with W stored [out, in]) on the active kernel.
func BenchmarkGemm(b *testing.B) {
	for _, s := range benchShapes {
		for _, bt := range []bool{false, true} {
			name := s.name + "/NN"
			if bt {
				name = s.name + "/NT"
			}
			b.Run(name, func(b *testing.B) { benchOne(b, 1, s.m, s.n, s.k, false, bt) })
		}
	}
}

// BenchmarkGemmAttention is the batched attention product [B·H, T, hd]·[B·H, hd, T].
func BenchmarkGemmAttention(b *testing.B) {
	benchOne(b, 16*9, 90, 90, 64, false, true)
}

// BenchmarkGemmGrad is the weight gradient xᵀ·dy of a 576→1536 layer over 1,440 tokens.
func BenchmarkGemmGrad(b *testing.B) {
	benchOne(b, 1, 576, 1536, 1440, true, false)
}

func benchOne(b *testing.B, batch, m, n, k int, at, bt bool) {
	a := Mat{Data: make([]float32, batch*m*k), BS: m * k, RS: k, CS: 1}
	if at {
		a.RS, a.CS = 1, m
	}
	bm := Mat{Data: make([]float32, batch*k*n), BS: k * n, RS: n, CS: 1}
	if bt {
		bm.RS, bm.CS = 1, k
	}
	for i := range a.Data {
		a.Data[i] = float32(i%7) * 0.1
	}
	for i := range bm.Data {
		bm.Data[i] = float32(i%5) * 0.1
	}
	c := make([]float32, batch*m*n)
	defer SetThreads(SetThreads(*benchThreads))
	defer setBlocking(*benchKC, *benchMC, *benchNC, *benchInPlace)()
	defer setPaths()()
	b.ResetTimer()
	cpu0 := cpuSeconds()
	for b.Loop() {
		Gemm(batch, m, n, k, a, bm, c)
	}
	report(b, 2*float64(batch)*float64(m)*float64(n)*float64(k), cpuSeconds()-cpu0)
}

// report sets the GFLOP/s metrics of a benchmark of flops per iteration:
// per wall second and per CPU second of the whole process (less disturbed
// by other processes on a shared machine; with n threads busy it is 1/n of
// the parallel speed).
func report(b *testing.B, flops, cpu float64) {
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu > 0 {
		b.ReportMetric(flops*float64(b.N)/cpu/1e9, "GFLOP/cpu-s")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkGemmKernels compares the kernel families on the 256×576·576×1536
// product (each family forced; unsupported ones are skipped).
func BenchmarkGemmKernels(b *testing.B) {
	for _, impl := range []Impl{Portable, AVX2, AVX512} {
		b.Run(impl.String(), func(b *testing.B) {
			prev, err := Use(impl)
			if err != nil {
				b.Skip(err)
			}
			defer Use(prev)
			benchOne(b, 1, 256, 1536, 576, false, false)
		})
	}
}

// stepShapes are the largest products of bench/grpostep's full step
// (16×86 = 1376 tokens, SmolLM2-135M: hidden 576, MLP 1536, 9 heads of
// 64): forward x·Wᵀ, the input gradient dy·W, the weight gradient dyᵀ·x.
var stepShapes = []struct {
	name    string
	m, k, n int
	at, bt  bool
}{
	{"up_fwd_1376x576x1536_NT", 1376, 576, 1536, false, true},
	{"down_fwd_1376x1536x576_NT", 1376, 1536, 576, false, true},
	{"up_dx_1376x1536x576_NN", 1376, 1536, 576, false, false},
	{"down_dx_1376x576x1536_NN", 1376, 576, 1536, false, false},
	{"up_dw_576x1376x1536_TN", 576, 1376, 1536, true, false},
	{"down_dw_1536x1376x576_TN", 1536, 1376, 576, true, false},
	{"q_dw_576x1376x576_TN", 576, 1376, 576, true, false},
	{"kv_dw_576x1376x192_TN", 576, 1376, 192, true, false},
	{"kv_dw_192x1376x576_TN", 192, 1376, 576, true, false},
	{"lmhead_dw_576x96x49152_TN", 576, 96, 49152, true, false},
	{"lmhead_dw_49152x96x576_TN", 49152, 96, 576, true, false},
}

// BenchmarkGemmStep runs stepShapes (GFLOP/s on GOMAXPROCS goroutines).
func BenchmarkGemmStep(b *testing.B) {
	for _, s := range stepShapes {
		b.Run(s.name, func(b *testing.B) { benchOne(b, 1, s.m, s.n, s.k, s.at, s.bt) })
	}
}

// decodeSteps are one decode step's x·Wᵀ products at batch 32 on the
// SmolLM2-135M shape (per layer: q and o, k and v, gate and up, down; then
// the tied LM head).
var decodeSteps = []struct {
	name    string
	m, k, n int
}{
	{"q_32x576x576", 32, 576, 576},
	{"kv_32x576x192", 32, 576, 192},
	{"up_32x576x1536", 32, 576, 1536},
	{"down_32x1536x576", 32, 1536, 576},
	{"lmhead_32x576x49152", 32, 576, 49152},
}

// benchDecodeRows replaces decodeSteps' 32 rows of x in BenchmarkGemmDecode32.
var benchDecodeRows = flag.Int("gemm.decoderows", 32, "rows of x in BenchmarkGemmDecode32's products")

// BenchmarkGemmDecode32 runs decodeSteps with the weights cycling through
// copies that together exceed the last-level cache, as a decode step reads
// each weight once from memory (-gemm.strided 0 turns the strided path
// off, -gemm.dot 0 the dot path, -gemm.decoderows sets the batch).
func BenchmarkGemmDecode32(b *testing.B) {
	for _, s := range decodeSteps {
		s.m = *benchDecodeRows
		b.Run(s.name, func(b *testing.B) {
			copies := max(1, (256<<20)/(4*s.k*s.n))
			a := Mat{Data: make([]float32, s.m*s.k), RS: s.k, CS: 1}
			for i := range a.Data {
				a.Data[i] = float32(i%7) * 0.1
			}
			ws := make([]Mat, copies)
			for i := range ws {
				ws[i] = Mat{Data: make([]float32, s.k*s.n), RS: 1, CS: s.k}
				for j := range ws[i].Data {
					ws[i].Data[j] = float32((i+j)%5) * 0.1
				}
			}
			c := make([]float32, s.m*s.n)
			defer SetThreads(SetThreads(*benchThreads))
			defer setPaths()()
			b.ResetTimer()
			cpu0 := cpuSeconds()
			i := 0
			for b.Loop() {
				Gemm(1, s.m, s.n, s.k, a, ws[i%copies], c)
				i++
			}
			report(b, 2*float64(s.m*s.n*s.k), cpuSeconds()-cpu0)
		})
	}
}

// benchStrided sets stridedMinRows in benchmarks (0 turns the strided path
// off); negative keeps the default.
var benchStrided = flag.Int("gemm.strided", -1, "fewest rows of A for the strided path in benchmarks (0: off, -1: default)")

// setPaths applies -gemm.dot and -gemm.strided and returns a func
// restoring the defaults.
func setPaths() func() {
	dot, strided := dotMaxRows, stridedMinRows
	if *benchDot >= 0 {
		dotMaxRows = *benchDot
	}
	if *benchStrided == 0 {
		stridedMinRows = 1 << 30
	} else if *benchStrided > 0 {
		stridedMinRows = *benchStrided
	}
	return func() { dotMaxRows, stridedMinRows = dot, strided }
}

// BenchmarkStridedKernel is the full-height strided kernel (W·xᵀ at 32
// rows of x) alone with its A rows and its panel in L1 (-gemm.kc sets k,
// default 128), the ceiling for the decode products of BenchmarkGemmDecode32;
// -gemm.kc 576 keeps the rows and panel of a k = 576 product in L2.
func BenchmarkStridedKernel(b *testing.B) {
	kern := kernels.Load()
	if kern.strided == nil {
		b.Skip("no strided kernels on this CPU")
	}
	k := 128
	if *benchKC > 0 {
		k = *benchKC
	}
	mr := len(kern.strided) - 1
	a := make([]float32, mr*k)
	nr := kern.stridedNR
	panel := make([]float32, k*nr)
	c := make([]float32, mr*nr)
	f := kern.strided[mr]
	cpu0 := cpuSeconds()
	for b.Loop() {
		f(k, &a[0], k, &panel[0], &c[0], nr, 0)
	}
	report(b, 2*float64(mr*nr*k), cpuSeconds()-cpu0)
}
