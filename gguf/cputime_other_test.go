//go:build !unix

package gguf

// cpuSeconds is not measured here; benchmarks then report wall time only.
func cpuSeconds() float64 { return 0 }
