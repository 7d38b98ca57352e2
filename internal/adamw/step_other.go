//go:build !amd64 || purego

package adamw

// stepVec does nothing without the amd64 assembly: step's Go loop does
// every element.
func stepVec(Params, []float32, []float32, []float32, []float32, bool, bool) int { return 0 }
