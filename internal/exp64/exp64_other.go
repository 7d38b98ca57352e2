//go:build !amd64 || purego

package exp64

const haveVector = false

func shiftedExpAVX2(dst *float64, src *float32, n int, t, shift float64, div int) int {
	panic("exp64: no vector loop on this platform")
}
