//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

//go:generate go run ./gen -o kernel_amd64.s -decl kernel_amd64_decl.go

// registerArch adds the assembly kernels this CPU can run. x/sys/cpu checks
// that the OS saves the wider registers too (XCR0), not just CPUID.
func registerArch() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		kernels.Add(&kernel{impl: AVX2, mr: 6, nr: 16, rows: kernAVX2Rows[:],
			packT: packT16, dot: dotAVX2Rows[:], strided: kernTAVX2Rows[:], stridedNR: 16, stridedMin: 17})
	}
	if cpu.X86.HasAVX512F && cpu.X86.HasFMA {
		kernels.Add(&kernel{impl: AVX512, mr: 12, nr: 32, rows: kernAVX512Rows[:],
			packT: packT32, dot: dotAVX512Rows[:], strided: kernTAVX512Rows[:], stridedNR: 32, stridedMin: 17})
	}
}
