package model

import "github.com/grpokit/grpokit/internal/quant"

// HeldBytes returns the bytes the weights of a model with config c take
// in memory when held under storage s (see Storage), for a checkpoint
// whose matrices are stored as fileDType ("BF16", "F16" or "F32", as in
// safetensors; "" means BF16, what most checkpoints ship). It follows the
// rules Load applies tensor by tensor: norms and biases float32, decoder
// projections quantized under NF4/int8 (NF4: half a byte a value plus a
// float32 absmax per block of 64, or with doubleQuant an 8-bit absmax and
// a float32 scale and offset per 256 blocks; int8: a byte a value and a
// float32 scale per output row), embeddings and LM head bfloat16 unless
// s is StorageF32. The memory planner (grpo.PlanMemory) uses it.
func (c Config) HeldBytes(s Storage, fileDType string, doubleQuant bool) int64 {
	if fileDType == "" {
		fileDType = "BF16"
	}
	var total int64
	for _, w := range c.Weights() {
		n := int64(1)
		for _, d := range w.Shape {
			n *= int64(d)
		}
		switch s.formatFor(w.Name, w.Shape, fileDType) {
		case "bf16":
			total += 2 * n
		case "nf4":
			blocks := (n + quant.BlockSize - 1) / quant.BlockSize
			if doubleQuant {
				groups := (blocks + quant.DoubleBlockSize - 1) / quant.DoubleBlockSize
				total += (n+1)/2 + blocks + 8*groups
			} else {
				total += (n+1)/2 + 4*blocks
			}
		case "int8":
			total += n + 4*int64(w.Shape[0])
		default:
			total += 4 * n
		}
	}
	return total
}

// LargestMatrix returns the element count of c's largest weight matrix
// (usually the embedding or LM head): the size of the float32 copy a
// low-precision weight is widened to, transiently, inside its product.
func (c Config) LargestMatrix() int64 {
	var m int64
	for _, w := range c.Weights() {
		if len(w.Shape) == 2 {
			m = max(m, int64(w.Shape[0])*int64(w.Shape[1]))
		}
	}
	return m
}
