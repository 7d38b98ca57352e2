package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/internal/quant"
	"github.com/grpokit/grpokit/internal/vjp"
)

// Storage is how a model holds its weights. Only StorageF32 weights can
// train (full fine-tuning keeps float32 masters); the others are for a
// frozen base under LoRA (QLoRA) and for reference models. Whatever the
// storage, every product runs in float32 on the same float32 values. On the
// pure-Go backend a low-precision weight is never widened whole: its
// products decode it while packing their panels (internal/gemm's Lowp, fed
// by lowpWeight's carriers), reading 2 (bf16), 1 (int8) or ½ (NF4) bytes a
// value, or a GGUF file's own blocks (StorageGGUF). Elsewhere (XLA) it is widened inside the graph just before its
// product, and the widened copy lives only as long as that product (the
// backward pass widens it again rather than keeping it;
// internal/vjp.Recompute). Norm weights and biases always stay float32.
type Storage string

const (
	// StorageF32 holds every weight as float32 (the default).
	StorageF32 Storage = ""
	// StorageAsStored keeps BF16 tensors of the checkpoint as bfloat16 and
	// everything else float32 (F16 is widened: SimpleGo cannot convert it).
	StorageAsStored Storage = "stored"
	// StorageBF16 holds matrices (projections, embeddings, LM head) as
	// bfloat16, rounding float32 ones to nearest even.
	StorageBF16 Storage = "bf16"
	// StorageNF4 is QLoRA's 4-bit NormalFloat (PEFT/transformers
	// BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")):
	// the decoder layers' projections in blocks of 64 with an absmax each
	// (see internal/quant); embeddings and LM head bfloat16, as
	// bitsandbytes leaves them. A projection whose size is not a multiple
	// of 64 stays bfloat16.
	StorageNF4 Storage = "nf4"
	// StorageInt8 is LLM.int8's weight format (load_in_8bit=True): int8
	// projections with an absmax per output row (no outlier decomposition
	// of activations: products are float32); embeddings and LM head
	// bfloat16.
	StorageInt8 Storage = "int8"
	// StorageGGUF keeps the matrices of a GGUF file that are stored as
	// Q4_0, Q4_1, Q8_0 or Q4_K in those blocks (the file's own bytes), for
	// QLoRA on the file's quantization: each product decodes them with
	// ggml's arithmetic, so the model computes what a float32 model of the
	// file's dequantized weights computes, bit for bit, with no second
	// rounding. Other matrices are held as StorageAsStored holds them
	// (bfloat16 for BF16, float32 for every other type, exactly); norms
	// and biases float32. Only FromBlocks (gguf.LoadModel) can fill it; on
	// a model from any other source it holds weights as StorageAsStored.
	StorageGGUF Storage = "gguf"
)

// ParseStorage accepts "", "f32", "stored", "bf16", "nf4", "int8"
// (bitsandbytes' names: "fp4" is not supported) and "gguf".
func ParseStorage(s string) (Storage, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "f32", "float32", "none":
		return StorageF32, nil
	case "stored", "as-stored":
		return StorageAsStored, nil
	case "bf16", "bfloat16":
		return StorageBF16, nil
	case "nf4", "4bit":
		return StorageNF4, nil
	case "int8", "8bit":
		return StorageInt8, nil
	case "gguf":
		return StorageGGUF, nil
	}
	return "", fmt.Errorf("model: unknown weight storage %q (want f32, stored, bf16, nf4, int8 or gguf)", s)
}

// Quantized reports whether s is NF4, int8 or GGUF blocks (a frozen base
// only).
func (s Storage) Quantized() bool { return s == StorageNF4 || s == StorageInt8 || s == StorageGGUF }

// Variable names, next to a projection's "weight", of its quantized forms.
const (
	varNF4      = "weight_nf4"          // uint8 [out, in/2, 1] ([N/2] if in is odd): two codes a byte
	varAbsmax   = "weight_absmax"       // float32 [N/64]
	varAbsmaxQ  = "weight_absmax_q"     // uint8 [N/64]: double quantization
	varAbsmax2  = "weight_absmax_scale" // float32 [N/64/256]
	varAbsmaxOf = "weight_absmax_offset"
	varInt8     = "weight_int8"  // int8 [out, in, 1]
	varRowScale = "weight_scale" // float32 [out]: absmax/127
)

// ggmlVar is the variable, next to a matrix's "weight", of its blocks of
// GGML type t: uint8 [out, in/values, bytes] ("weight_q4_0", …).
func ggmlVar(t quant.GGML) string { return "weight_" + strings.ToLower(t.String()) }

// ggmlTypes are the block types a weight can be held in.
var ggmlTypes = []quant.GGML{quant.Q4_0, quant.Q4_1, quant.Q8_0, quant.Q4_K}

// otherVars are the variables of every non-plain format of a weight.
var otherVars = func() []string {
	v := []string{varNF4, varAbsmax, varAbsmaxQ, varAbsmax2, varAbsmaxOf, varInt8, varRowScale}
	for _, t := range ggmlTypes {
		v = append(v, ggmlVar(t))
	}
	return v
}()

// kindOf tells what a weight is, for the storage rules.
func kindOf(name string, shape []int) string {
	switch {
	case len(shape) != 2:
		return "vector" // norms and biases
	case strings.HasPrefix(name, "model.layers."):
		return "projection"
	}
	return "matrix" // embeddings, LM head
}

// formatFor returns how a weight of the given file dtype is held under s:
// "f32", "bf16", "nf4", "int8" or a GGML block type ("Q4_0", …, for a
// fileDType of that name under StorageGGUF).
func (s Storage) formatFor(name string, shape []int, fileDType string) string {
	kind := kindOf(name, shape)
	if kind == "vector" {
		return "f32"
	}
	switch s {
	case StorageGGUF:
		if t, ok := quant.ParseGGML(fileDType); ok {
			if vals, _ := t.Block(); shape[1]%vals == 0 {
				return fileDType
			}
		}
		if fileDType == "BF16" {
			return "bf16"
		}
		return "f32"
	case StorageAsStored:
		if fileDType == "BF16" {
			return "bf16"
		}
		return "f32"
	case StorageBF16:
		return "bf16"
	case StorageNF4:
		if kind == "projection" && shape[0]*shape[1]%quant.BlockSize == 0 {
			return "nf4"
		}
		return "bf16"
	case StorageInt8:
		if kind == "projection" {
			return "int8"
		}
		return "bf16"
	}
	return "f32"
}

// toBF16 rounds float32 values to bfloat16, to nearest even (torch's
// .to(torch.bfloat16)); NaN stays NaN.
func toBF16(data []float32) []bfloat16.BFloat16 {
	out := make([]bfloat16.BFloat16, len(data))
	roundBF16(data, out)
	return out
}

// roundBF16 writes src rounded to bfloat16 (as toBF16) into dst[:len(src)].
func roundBF16(src []float32, dst []bfloat16.BFloat16) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = backend.RoundBF16(v)
	}
}

// putVar stores t as variable v of scope, replacing any value (the shape
// and dtype may change), frozen unless trainable.
func (m *Model) putVar(scope, v string, t *tensors.Tensor, trainable bool) {
	c := m.ctx.InAbsPath(scope)
	if old := c.GetVariable(v); old != nil && old.Shape().Equal(t.Shape()) {
		_ = old.SetValue(t)
		old.SetTrainable(trainable)
		return
	}
	m.deleteVar(scope, v)
	c.VariableWithValue(v, t).SetTrainable(trainable)
}

// deleteVar removes variable v of scope if it exists.
func (m *Model) deleteVar(scope, v string) {
	if x := m.ctx.InAbsPath(scope).GetVariable(v); x != nil {
		m.ctx.DeleteVariable(scope, v)
	}
}

// storeAs puts weight name (float32 data, shape) in the given format,
// removing the variables of the other formats.
func (m *Model) storeAs(name string, data []float32, shape []int, format string, double bool) error {
	scope, v, err := ScopeOf(name)
	if err != nil {
		return err
	}
	if v != "weight" && format != "f32" {
		return fmt.Errorf("model: %s: only .weight tensors are stored in %s", name, format)
	}
	if _, ok := quant.ParseGGML(format); ok {
		return fmt.Errorf("model: %s: a weight held in a GGUF file's %s blocks cannot be set from float32 values", name, format)
	}
	for _, x := range otherVars {
		if v == "weight" {
			m.deleteVar(scope, x)
		}
	}
	switch format {
	case "f32":
		m.putVar(scope, v, onBackend(m.backend, data, shape...), true)
	case "bf16":
		m.putVar(scope, v, onBackend(m.backend, toBF16(data), shape...), false)
	case "nf4":
		m.deleteVar(scope, v)
		// [out, in/2, 1]: the form of the fused products' carrier (lowpWeight).
		packedDims := []int{(len(data) + 1) / 2}
		if len(shape) == 2 && shape[1]%2 == 0 {
			packedDims = []int{shape[0], shape[1] / 2, 1}
		}
		// The codes go straight into the tensor that holds them: loading
		// a large model leaves no garbage as large as its weights.
		absmax := make([]float32, (len(data)+quant.BlockSize-1)/quant.BlockSize)
		packed, err := fillTensor(m.backend, packedDims, func(dst []uint8) error {
			quant.QuantizeNF4Into(data, dst, absmax)
			return nil
		})
		if err != nil {
			return fmt.Errorf("model: %s: %w", name, err)
		}
		m.putVar(scope, varNF4, packed, false)
		if double {
			d := quant.QuantizeBlockwise8(absmax)
			m.putVar(scope, varAbsmaxQ, tensors.FromFlatDataAndDimensions(d.Codes, len(d.Codes)), false)
			m.putVar(scope, varAbsmax2, tensors.FromFlatDataAndDimensions(d.Absmax, len(d.Absmax)), false)
			m.putVar(scope, varAbsmaxOf, tensors.FromScalar(d.Offset), false)
		} else {
			m.putVar(scope, varAbsmax, onBackend(m.backend, absmax, len(absmax)), false)
		}
	case "int8":
		m.deleteVar(scope, v)
		q, err := quant.QuantizeInt8(data, shape[0], shape[1])
		if err != nil {
			return fmt.Errorf("model: %s: %w", name, err)
		}
		scale := make([]float32, len(q.Absmax))
		for i, a := range q.Absmax {
			scale[i] = a * float32(7.874015718698502e-3)
		}
		// [out, in, 1]: the form of the fused products' carrier (lowpWeight).
		m.putVar(scope, varInt8, onBackend(m.backend, q.Q, shape[0], shape[1], 1), false)
		m.putVar(scope, varRowScale, onBackend(m.backend, scale, shape[0]), false)
	default:
		return fmt.Errorf("model: %s: unknown format %q", name, format)
	}
	return nil
}

// Storage returns how the model holds its weights.
func (m *Model) Storage() Storage { return m.storage }

// SetStorage converts the weights to s, one tensor at a time (the peak is
// the model in both formats for one tensor). Going back to StorageF32
// widens bfloat16 exactly and dequantizes NF4/int8 (their rounding stays).
// doubleQuant selects NF4's double quantization of the absmax
// (bnb_4bit_use_double_quant). Graphs compiled before are dropped. The
// base weights of a non-f32 model are frozen.
func (m *Model) SetStorage(s Storage, doubleQuant bool) error {
	if _, err := ParseStorage(string(s)); err != nil {
		return err
	}
	var errs []error
	for _, w := range m.cfg.Weights() {
		if _, blocks := quant.ParseGGML(m.formatOf(w.Name)); blocks && s == StorageGGUF {
			continue // the file's blocks stay as they are
		}
		data, shape, err := m.Weight(w.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		src := "F32"
		if m.formatOf(w.Name) == "bf16" {
			src = "BF16"
		}
		if err := m.storeAs(w.Name, data, shape, s.formatFor(w.Name, shape, src), doubleQuant); err != nil {
			errs = append(errs, err)
		}
	}
	m.storage = s
	m.resetExecs()
	if len(errs) > 0 {
		return fmt.Errorf("model: set storage %q: %w", s, errors.Join(errs...))
	}
	return nil
}

// formatOf returns how weight name is held now ("" if it is missing).
func (m *Model) formatOf(name string) string {
	scope, v, err := ScopeOf(name)
	if err != nil {
		return ""
	}
	c := m.ctx.InAbsPath(scope)
	if x := c.GetVariable(v); x != nil {
		if x.Shape().DType == dtypes.BFloat16 {
			return "bf16"
		}
		return "f32"
	}
	if v != "weight" {
		return ""
	}
	if c.GetVariable(varNF4) != nil {
		return "nf4"
	}
	if c.GetVariable(varInt8) != nil {
		return "int8"
	}
	for _, t := range ggmlTypes {
		if c.GetVariable(ggmlVar(t)) != nil {
			return t.String()
		}
	}
	return ""
}

// hostWeight returns weight name (no tied fallback) as float32 values,
// dequantizing it if needed; ok is false when the model has no such weight.
func (m *Model) hostWeight(name string, shape []int) (data []float32, ok bool, err error) {
	scope, v, err := ScopeOf(name)
	if err != nil {
		return nil, false, err
	}
	c := m.ctx.InAbsPath(scope)
	value := func(v string) (*tensors.Tensor, error) {
		x := c.GetVariable(v)
		if x == nil {
			return nil, fmt.Errorf("model: weight %q: no variable %s", name, v)
		}
		return x.Value()
	}
	switch m.formatOf(name) {
	case "":
		return nil, false, nil
	case "f32", "bf16":
		t, err := value(v)
		if err != nil {
			return nil, true, err
		}
		if t.DType() == dtypes.BFloat16 {
			raw, err := tensors.CopyFlatData[bfloat16.BFloat16](t)
			if err != nil {
				return nil, true, err
			}
			out := make([]float32, len(raw))
			for i, b := range raw {
				out[i] = b.Float32()
			}
			return out, true, nil
		}
		data, err := tensors.CopyFlatData[float32](t)
		return data, true, err
	case "nf4":
		n := shape[0] * shape[1]
		q := &quant.NF4Tensor{N: n}
		t, err := value(varNF4)
		if err != nil {
			return nil, true, err
		}
		if q.Packed, err = tensors.CopyFlatData[uint8](t); err != nil {
			return nil, true, err
		}
		if c.GetVariable(varAbsmaxQ) != nil {
			d := &quant.Blockwise8{N: (n + quant.BlockSize - 1) / quant.BlockSize}
			codes, err1 := value(varAbsmaxQ)
			scales, err2 := value(varAbsmax2)
			off, err3 := value(varAbsmaxOf)
			if err := errors.Join(err1, err2, err3); err != nil {
				return nil, true, err
			}
			d.Codes, err1 = tensors.CopyFlatData[uint8](codes)
			d.Absmax, err2 = tensors.CopyFlatData[float32](scales)
			d.Offset = tensors.ToScalar[float32](off)
			if err := errors.Join(err1, err2); err != nil {
				return nil, true, err
			}
			q.Double = d
		} else {
			t, err := value(varAbsmax)
			if err != nil {
				return nil, true, err
			}
			if q.Absmax, err = tensors.CopyFlatData[float32](t); err != nil {
				return nil, true, err
			}
		}
		if err := q.Validate(); err != nil {
			return nil, true, fmt.Errorf("model: weight %q: %w", name, err)
		}
		return q.Dequantize(make([]float32, n)), true, nil
	case "int8":
		qt, err1 := value(varInt8)
		st, err2 := value(varRowScale)
		if err := errors.Join(err1, err2); err != nil {
			return nil, true, err
		}
		q, err1 := tensors.CopyFlatData[int8](qt)
		scale, err2 := tensors.CopyFlatData[float32](st)
		if err := errors.Join(err1, err2); err != nil {
			return nil, true, err
		}
		out := make([]float32, len(q))
		cols := shape[1]
		for i, x := range q {
			out[i] = float32(x) * scale[i/cols]
		}
		return out, true, nil
	}
	if t, ok := quant.ParseGGML(m.formatOf(name)); ok {
		bt, err := value(ggmlVar(t))
		if err != nil {
			return nil, true, err
		}
		blocks, err := tensors.CopyFlatData[uint8](bt)
		if err != nil {
			return nil, true, err
		}
		n := shape[0] * shape[1]
		if vals, size := t.Block(); len(blocks) != n/vals*size {
			return nil, true, fmt.Errorf("model: weight %q: %d bytes of %v blocks for %d values", name, len(blocks), t, n)
		}
		out := make([]float32, n)
		quant.DecodeGGML(t, blocks, out)
		return out, true, nil
	}
	return nil, false, nil
}

// storedWeight returns the float32 graph node of weight name held in
// scope/v, widening or dequantizing a low-precision one (marked for
// recomputation in the backward pass), or nil if it is not in ctx.
func storedWeight(ctx *mlctx.Context, g *Graph, scope, v string, shape []int) *Node {
	c := ctx.InAbsPath(scope)
	if x := c.GetVariable(v); x != nil {
		n := x.ValueGraph(g)
		if n.DType() == dtypes.Float32 {
			return n
		}
		return vjp.Recompute(widen, n)
	}
	if v != "weight" {
		return nil
	}
	if p := c.GetVariable(varNF4); p != nil {
		return vjp.Recompute(func(in ...*Node) *Node { return dequantNF4(in[0], in[1], shape) }, p.ValueGraph(g), nf4Absmax(c, g))
	}
	if q := c.GetVariable(varInt8); q != nil {
		return vjp.Recompute(dequantInt8, q.ValueGraph(g), c.GetVariable(varRowScale).ValueGraph(g))
	}
	for _, t := range ggmlTypes {
		if b := c.GetVariable(ggmlVar(t)); b != nil {
			return vjp.Recompute(func(in ...*Node) *Node { return Reshape(dequantGGML(t, in[0]), shape...) }, b.ValueGraph(g))
		}
	}
	return nil
}

// nf4Absmax returns the absmax [N/64] of the NF4 weight in c, dequantizing
// a double-quantized one (marked for recomputation).
func nf4Absmax(c *mlctx.Context, g *Graph) *Node {
	if q := c.GetVariable(varAbsmaxQ); q != nil {
		return vjp.Recompute(dequantAbsmax, q.ValueGraph(g),
			c.GetVariable(varAbsmax2).ValueGraph(g), c.GetVariable(varAbsmaxOf).ValueGraph(g))
	}
	return c.GetVariable(varAbsmax).ValueGraph(g)
}

// lowpWeight returns the carrier of a low-precision weight scope/v for a
// fused product (see internal/backend's simplego_lowp.go): the float32
// weight as a node that the "go" backend never materialises, its products
// decoding the stored values while packing them. found reports whether
// the weight exists; w is nil when it is float32 or cannot be fused (the
// caller then uses storedWeight). An NF4 carrier is [out, in/2, 2]
// (productLowp reshapes x to match). Only DotGenerals may consume it.
func lowpWeight(ctx *mlctx.Context, g *Graph, scope, v string) (w *Node, found bool) {
	c := ctx.InAbsPath(scope)
	if x := c.GetVariable(v); x != nil {
		n := x.ValueGraph(g)
		if n.DType() != dtypes.BFloat16 || n.Rank() != 2 {
			return nil, true
		}
		return vjp.Recompute(bf16Carrier, n), true
	}
	if v != "weight" {
		return nil, false
	}
	if p := c.GetVariable(varNF4); p != nil {
		packed, absmax := p.ValueGraph(g), nf4Absmax(c, g)
		if packed.Rank() != 3 || absmax.Shape().Dim(0)%2 != 0 {
			return nil, true
		}
		return vjp.Recompute(nf4Carrier, packed, absmax), true
	}
	if q := c.GetVariable(varInt8); q != nil {
		return vjp.Recompute(int8Carrier, q.ValueGraph(g), c.GetVariable(varRowScale).ValueGraph(g)), true
	}
	for _, t := range ggmlTypes {
		if b := c.GetVariable(ggmlVar(t)); b != nil {
			return vjp.Recompute(func(in ...*Node) *Node { return ggmlCarrier(t, in[0]) }, b.ValueGraph(g)), true
		}
	}
	return nil, false
}

// fuseLowp turns the fused low-precision products on (tests compare
// against the separate dequantization with it off).
var fuseLowp = true

// WidensWeights reports whether the model's products widen a
// low-precision weight to a float32 copy first (the XLA backend, or a
// bfloat16 compute dtype), rather than decoding it while packing their
// panels (the pure-Go backend): memory planning counts that copy.
func (m *Model) WidensWeights() bool {
	return !(fuseLowp && m.Compute() == dtypes.Float32 && backend.FusedLowp(m.backend))
}

// bf16Carrier widens in[0] (bfloat16 [out, in]), marked for a fused product.
func bf16Carrier(in ...*Node) *Node {
	w := ConvertDType(in[0], dtypes.Float32)
	backend.MarkLowp(w, "bf16")
	return w
}

// nf4Carrier is (packed [out, in/2, 1], absmax [N/64]) as the marked
// [out, in/2, 2] float32 weight.
func nf4Carrier(in ...*Node) *Node {
	packed, absmax := in[0], in[1]
	w := Gather(Reshape(absmax, absmax.Shape().Dim(0)/2, 2), packed)
	backend.MarkLowp(w, "nf4")
	return w
}

// int8Carrier is (q [out, in, 1], scale [out]) as the marked [out, in]
// float32 weight. (Gather's shape check wants the operand's rank to reach
// the index axis: scale goes in as [out, 1].) The base is frozen, and this
// Gather, whose indices are the codes, has no gradient: scale's stops
// before it (a checkpointed layer then leaves scale out of what it
// differentiates).
func int8Carrier(in ...*Node) *Node {
	q, scale := in[0], in[1]
	w := BackendGather(Reshape(StopGradient(scale), scale.Shape().Dim(0), 1), q, 2, nil, []int{0, 1}, []int{0}, []int{1, 1}, false)
	backend.MarkLowp(w, "int8")
	return w
}

// productLowp is x·Wᵀ for a carrier w of lowpWeight.
func productLowp(x, w *Node) *Node {
	if w.Rank() == 3 { // NF4: [out, in/2, 2]; GGML: [out, in/values, values]
		dims := append(slices.Clone(x.Shape().Dimensions[:x.Rank()-1]), w.Shape().Dim(1), w.Shape().Dim(2))
		x = Reshape(x, dims...)
		return DotGeneral(x, []int{x.Rank() - 2, x.Rank() - 1}, nil, w, []int{1, 2}, nil)
	}
	return DotGeneral(x, []int{x.Rank() - 1}, nil, w, []int{1}, nil)
}

// widen converts in[0] to float32.
func widen(in ...*Node) *Node { return ConvertDType(in[0], dtypes.Float32) }

// nf4Pairs is a [256, 2] table: the NF4 values of a byte's high and low
// nibble, so that one Gather decodes both codes of a byte.
var nf4Pairs = func() [][]float32 {
	t := make([][]float32, 256)
	for b := range t {
		t[b] = []float32{quant.NF4[b>>4], quant.NF4[b&15]}
	}
	return t
}()

// dequantNF4 decodes packed [N/2] uint8 with absmax [N/64] to [out, in].
func dequantNF4(packed, absmax *Node, shape []int) *Node {
	g := packed.Graph()
	idx := Reshape(ConvertDType(packed, dtypes.Int32), packed.Shape().Size(), 1) // [N/2, 1]
	vals := Gather(Const(g, nf4Pairs), idx)                                      // [N/2, 2]
	blocks := absmax.Shape().Dim(0)
	vals = Mul(Reshape(vals, blocks, quant.BlockSize), Reshape(absmax, blocks, 1))
	return Reshape(vals, shape...)
}

// dequantAbsmax decodes double-quantized absmax: map[codes]·scale + offset.
func dequantAbsmax(in ...*Node) *Node {
	codes, scales, offset := in[0], in[1], in[2]
	g := codes.Graph()
	dm := quant.DynamicMap()
	n := codes.Shape().Dim(0)
	vals := Gather(Const(g, dm[:]), ExpandAxes(ConvertDType(codes, dtypes.Int32), -1)) // [n]
	nb := scales.Shape().Dim(0)
	full := nb * quant.DoubleBlockSize
	// Pad to whole blocks with a broadcast of the scales: [nb, 256] → first n.
	s := Reshape(BroadcastToDims(Reshape(scales, nb, 1), nb, quant.DoubleBlockSize), full)
	if full != n {
		s = Slice(s, AxisRange(0, n))
	}
	return Add(Mul(vals, s), offset)
}

// dequantInt8 is q·scale per row: in = (q [out, in] int8, scale [out]).
func dequantInt8(in ...*Node) *Node {
	q, scale := in[0], in[1] // q: [out, in, 1]
	return Mul(ConvertDType(Reshape(q, q.Shape().Dim(0), q.Shape().Dim(1)), dtypes.Float32), ExpandAxes(scale, -1))
}

// lookupRows gathers rows ids [B, T] of embedding weight name [V, H] as
// float32 [B, T, H]: a low-precision table is widened after the lookup,
// only for the rows used.
func lookupRows(ctx *mlctx.Context, g *Graph, name string, ids *Node, shape []int) *Node {
	idx := ExpandAxes(ConvertDType(ids, dtypes.Int32), -1)
	scope, v, err := ScopeOf(name)
	if err != nil {
		panic(err)
	}
	c := ctx.InAbsPath(scope)
	if x := c.GetVariable(v); x != nil {
		return ConvertDType(Gather(x.ValueGraph(g), idx), dtypes.Float32)
	}
	for _, t := range ggmlTypes {
		if b := c.GetVariable(ggmlVar(t)); b != nil && v == "weight" {
			// The rows' blocks, decoded: [B, T, nb, values] → [B, T, H].
			rows := dequantGGML(t, Gather(b.ValueGraph(g), idx))
			return Reshape(rows, append(slices.Clone(ids.Shape().Dimensions), shape[1])...)
		}
	}
	return Gather(storedWeight(ctx, g, scope, v, shape), idx)
}
