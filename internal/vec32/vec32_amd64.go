//go:build amd64 && !purego

package vec32

import "golang.org/x/sys/cpu"

//go:generate go run ./gen -o vec32_amd64.s -decl vec32_amd64_decl.go

// registerArch adds the assembly families this CPU can run. x/sys/cpu
// checks that the OS saves the wider registers too (XCR0), not just CPUID.
func registerArch() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		families.Add(&family{impl: AVX2, block: 32, lanes: 8,
			vv:  [numOps]vvFunc{addVVAVX2, subVVAVX2, mulVVAVX2, divVVAVX2},
			vs:  [numOps]vsFunc{addVSAVX2, subVSAVX2, mulVSAVX2, divVSAVX2},
			sv:  [numOps]vsFunc{Sub: subSVAVX2, Div: divSVAVX2},
			exp: expAVX2, logit: logisticAVX2,
			where: [4]whereFunc{whereVVAVX2, whereVSAVX2, whereSVAVX2, whereSSAVX2}})
	}
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		// ZMM binary loops measured no faster than the YMM ones (cache and
		// memory bound), so AVX-512 only has its own exp and logistic.
		f := *families.Get(AVX2)
		f.impl, f.lanes, f.exp, f.logit = AVX512, 16, expAVX512, logisticAVX512
		families.Add(&f)
	}
}
