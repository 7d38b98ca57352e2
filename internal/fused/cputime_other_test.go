//go:build !unix

package fused

// cpuSeconds is not measured here; benchmarks then report wall time only.
func cpuSeconds() float64 { return 0 }
