package gemm

import "testing"

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
	b.ResetTimer()
	for b.Loop() {
		Gemm(batch, m, n, k, a, bm, c)
	}
	flops := 2 * float64(batch) * float64(m) * float64(n) * float64(k)
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
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
