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
// s is StorageF32. Under StorageGGUF, a fileDType naming a ggml block type
// ("Q4_0", "Q4_1", "Q8_0", "Q4_K") counts every matrix in those blocks (a
// file of one type; gguf.File.HeldBytes counts a real file tensor by
// tensor). The memory planner (grpo.PlanMemory) uses it.
func (c Config) HeldBytes(s Storage, fileDType string, doubleQuant bool) int64 {
	if fileDType == "" {
		fileDType = "BF16"
	}
	var total int64
	for _, w := range c.Weights() {
		total += WeightHeldBytes(w.Name, w.Shape, s, fileDType, doubleQuant)
	}
	return total
}

// WeightHeldBytes returns the bytes one weight (a Hugging Face name and
// shape, as Config.Weights lists it) of file dtype fileDType takes held
// under storage s: Config.HeldBytes is their sum; a GGUF file's loader
// passes each tensor's own type ("Q4_1", "F16", …).
func WeightHeldBytes(name string, shape []int, s Storage, fileDType string, doubleQuant bool) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	switch f := s.formatFor(name, shape, fileDType); f {
	case "bf16":
		return 2 * n
	case "nf4":
		blocks := (n + quant.BlockSize - 1) / quant.BlockSize
		if doubleQuant {
			groups := (blocks + quant.DoubleBlockSize - 1) / quant.DoubleBlockSize
			return (n+1)/2 + blocks + 8*groups
		}
		return (n+1)/2 + 4*blocks
	case "int8":
		return n + 4*int64(shape[0])
	case "f32":
		return 4 * n
	default: // GGML blocks
		t, _ := quant.ParseGGML(f)
		vals, size := t.Block()
		return n / int64(vals) * int64(size)
	}
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
