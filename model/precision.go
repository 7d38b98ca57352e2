package model

import (
	"fmt"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
)

// precision.go is the one place that decides the dtype a forward pass
// computes in (Options.Compute, SetCompute) and the few casts that follow
// from it. How weights are stored is a separate, orthogonal choice.
//
// In bfloat16 the graph follows transformers under torch_dtype=bfloat16
// (v4.43 eager attention): weights (cast from their storage) and
// activations are bf16, every product takes bf16 operands (backends
// accumulate in f32 and round the result; a bias is added to the f32
// product before the one rounding, as torch's addmm); a bf16 op rounds its
// result to nearest even (on the pure-Go backend internal/backend sees to
// it), and so do bf16 constants (scalarLike); a Python-float scale
// (the attention's) multiplies in f32; RMSNorm's statistics are f32 (a
// Llama norm casts back before multiplying by w, a Gemma norm multiplies by
// 1+w in f32 first); RoPE tables are computed in f32 and cast; the
// attention softmax runs in f32 and is cast back; logits come out as f32.
// An adapter's term is added in its own dtype (LoRA: f32, as PEFT's
// autocast_adapter_dtype keeps it) and the sum is cast back. Trainable
// float32 variables stay float32 masters: the cast is in the graph, so
// gradients and optimizer state are float32.

// ParseCompute reads a compute dtype as a flag or a config would give it:
// "", "f32", "float32", "fp32" (float32) or "bf16", "bfloat16" (also with
// a "torch." prefix, as torch_dtype is written). float16 is refused: the
// pure-Go backend cannot convert to it.
func ParseCompute(s string) (dtypes.DType, error) {
	switch strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "torch.") {
	case "", "f32", "float32", "fp32":
		return dtypes.Float32, nil
	case "bf16", "bfloat16":
		return dtypes.BFloat16, nil
	case "f16", "float16", "fp16", "half":
		return dtypes.InvalidDType, fmt.Errorf("model: compute dtype %q is not supported (want f32 or bf16)", s)
	}
	return dtypes.InvalidDType, fmt.Errorf("model: unknown compute dtype %q (want f32 or bf16)", s)
}

// checkCompute accepts the compute dtypes a Model runs in: float32
// (InvalidDType, the zero value, means float32) and bfloat16.
func checkCompute(dt dtypes.DType) (dtypes.DType, error) {
	switch dt {
	case dtypes.InvalidDType, dtypes.Float32:
		return dtypes.Float32, nil
	case dtypes.BFloat16:
		return dt, nil
	}
	return dtypes.InvalidDType, fmt.Errorf("model: compute dtype %s is not supported (want Float32 or BFloat16)", dt)
}

// Compute returns the dtype the model's graphs compute in: Float32 (the
// default) or BFloat16.
func (m *Model) Compute() dtypes.DType {
	if m.compute == dtypes.InvalidDType {
		return dtypes.Float32
	}
	return m.compute
}

// SetCompute switches the dtype of the graphs built from now on (see
// Options.Compute) and drops the compiled ones. The weights are not
// touched.
func (m *Model) SetCompute(dt dtypes.DType) error {
	dt, err := checkCompute(dt)
	if err != nil {
		return err
	}
	if dt != m.Compute() {
		m.compute = dt
		m.resetExecs()
	}
	return nil
}

// cast converts x to the compute dtype (no-op when it already is).
func (f *fwd) cast(x *Node) *Node { return ConvertDType(x, f.m.Compute()) }

// toF32 converts x to float32 (no-op when it already is): norms' statistics,
// softmax and the logits.
func toF32(x *Node) *Node { return ConvertDType(x, dtypes.Float32) }

// addDelta adds an adapter's term d to a projection's output y: in d's
// dtype, cast back to y's (PEFT adds an f32 LoRA term to a bf16 output in
// f32 and casts the sum).
func addDelta(y, d *Node) *Node {
	return ConvertDType(Add(ConvertDType(y, d.DType()), d), y.DType())
}
