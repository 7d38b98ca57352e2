//go:build amd64 && !purego

package gemm

//go:noescape
func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

// l2Bytes returns the size of one core's L2 cache as CPUID leaf
// 0x80000006 reports it (Intel and AMD alike), or 0 when it does not.
func l2Bytes() int {
	if maxExt, _, _, _ := cpuid(0x80000000, 0); maxExt < 0x80000006 {
		return 0
	}
	_, _, ecx, _ := cpuid(0x80000006, 0)
	return int(ecx>>16) << 10
}
