package model

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/internal/quant"
)

// BlockSource returns the stored blocks of one weight of a GGUF file (by
// its Hugging Face name and shape, as WeightSource), in the Hugging Face
// row order: its ggml type name ("Q4_0", "Q4_1", "Q8_0", "Q4_K", or any
// other such as "F16"), and, for the four block types, its bytes (rows of
// whole blocks, in a fresh slice the caller may keep). For another type
// the bytes may be nil: the weight is then read from the WeightSource.
type BlockSource func(name string, shape []int) (typ string, blocks []byte, err error)

// FromBlocks is FromWeights for a source that also has its weights'
// stored blocks (a GGUF file: gguf.LoadModel). Under StorageGGUF a matrix
// whose type is Q4_0, Q4_1, Q8_0 or Q4_K is held in those blocks, and the
// rest as StorageGGUF says; under any other storage it is FromWeights(cfg,
// src, opts).
func FromBlocks(cfg Config, src WeightSource, blocks BlockSource, opts *Options) (*Model, error) {
	st, dq := opts.storage()
	if st != StorageGGUF {
		return FromWeights(cfg, src, opts)
	}
	m, err := newEmpty(cfg, opts)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, w := range m.cfg.Weights() {
		if m.decoderOnly && w.Name == "lm_head.weight" {
			continue
		}
		typ, raw, err := blocks(w.Name, slices.Clone(w.Shape))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		format := st.formatFor(w.Name, w.Shape, typ)
		if t, ok := quant.ParseGGML(format); ok {
			if err := m.storeBlocks(w.Name, t, raw, w.Shape); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		data, err := src(w.Name, slices.Clone(w.Shape))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if n := numel(w.Shape); len(data) != n {
			errs = append(errs, fmt.Errorf("model: weight %s: %d values, want %d (shape %v)", w.Name, len(data), n, w.Shape))
			continue
		}
		if err := m.storeAs(w.Name, data, w.Shape, format, dq); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("model: %w", errors.Join(errs...))
	}
	return m, nil
}

// storeBlocks holds weight name [out, in] as its blocks of type t: the
// variable ggmlVar(t), uint8 [out, in/values, bytes].
func (m *Model) storeBlocks(name string, t quant.GGML, blocks []byte, shape []int) error {
	scope, v, err := ScopeOf(name)
	if err != nil {
		return err
	}
	vals, size := t.Block()
	if v != "weight" || len(shape) != 2 || vals == 0 || shape[1]%vals != 0 {
		return fmt.Errorf("model: %s %v: cannot be held in %v blocks", name, shape, t)
	}
	nb := shape[1] / vals
	if len(blocks) != shape[0]*nb*size {
		return fmt.Errorf("model: %s %v: %d bytes of %v blocks, want %d", name, shape, len(blocks), t, shape[0]*nb*size)
	}
	m.deleteVar(scope, v)
	for _, x := range otherVars {
		m.deleteVar(scope, x)
	}
	bt, err := fillTensor(m.backend, []int{shape[0], nb, size}, func(dst []uint8) error {
		copy(dst, blocks)
		return nil
	})
	if err != nil {
		return fmt.Errorf("model: %s: %w", name, err)
	}
	m.putVar(scope, ggmlVar(t), bt, false)
	return nil
}

// ggmlCarrier is blocks [out, nb, bytes] of type t as the marked
// [out, nb, values] float32 weight of a fused product (see
// internal/backend's simplego_lowp.go): a Gather from a [1, …, 1, values]
// operand whose index vectors are the blocks' bytes. Its stock meaning is
// never computed.
func ggmlCarrier(t quant.GGML, blocks *Node) *Node {
	vals, size := t.Block()
	dims := make([]int, size+1)
	axes := make([]int, size)
	sizes := make([]int, size+1)
	for i := range size {
		dims[i], axes[i], sizes[i] = 1, i, 1
	}
	dims[size], sizes[size] = vals, vals
	operand := Ones(blocks.Graph(), shapes.Make(dtypes.Float32, dims...))
	w := BackendGather(operand, blocks, 2, []int{2}, axes, axes, sizes, false)
	backend.MarkLowp(w, t.String())
	return w
}

// pow2Table[e] is 2^(max(e, 1) − 25): an fp16 value with exponent field e
// is (mantissa + 1024·[e > 0])·pow2Table[e], exactly.
var pow2Table = func() [][]float32 {
	t := make([][]float32, 32)
	for e := range t {
		t[e] = []float32{float32(math.Ldexp(1, max(e, 1)-25))}
	}
	return t
}()

// dequantGGML decodes blocks [..., nb, bytes] (uint8) of type t to float32
// [..., nb, values] with stock graph ops: the same float32 operations as
// ggml's dequantize_row_* (quant.DecodeGGML), so the same bits (a NaN
// scale gives a NaN of another payload). Integer fields are taken apart
// with int32 division, which SimpleGo and XLA both have.
func dequantGGML(t quant.GGML, blocks *Node) *Node {
	g := blocks.Graph()
	last := blocks.Rank() - 1
	b := ConvertDType(blocks, dtypes.Int32)
	bytesAt := func(lo, hi int) *Node { return SliceAxis(b, last, AxisRange(lo, hi)) }
	i32 := func(v int) *Node { return Scalar(g, dtypes.Int32, v) }
	div := func(x *Node, k int) *Node { return Div(x, i32(k)) }
	mod := func(x *Node, k int) *Node { return Sub(x, Mul(div(x, k), i32(k))) }
	f32 := func(x *Node) *Node { return ConvertDType(x, dtypes.Float32) }
	// fp16 at byte off: [..., nb, 1].
	fp16 := func(off int) *Node {
		bits := Add(bytesAt(off, off+1), Mul(bytesAt(off+1, off+2), i32(256)))
		sign := div(bits, 32768)
		e := mod(div(bits, 1024), 32)
		man := mod(bits, 1024)
		// [M, 1] indices: SimpleGo's Gather wants the index axis within
		// the table's rank.
		p2 := Reshape(Gather(Const(g, pow2Table), Reshape(e, e.Shape().Size(), 1)), e.Shape().Dimensions...)
		v := Mul(f32(Where(GreaterThan(e, i32(0)), Add(man, i32(1024)), man)), p2)
		zero := ZerosLike(v)
		special := Where(Equal(man, i32(0)), Add(zero, Scalar(g, dtypes.Float32, math.Inf(1))), Add(zero, Scalar(g, dtypes.Float32, math.NaN())))
		v = Where(Equal(e, i32(31)), special, v)
		return Where(Equal(sign, i32(1)), Neg(v), v)
	}
	nibbles := func(qs *Node) *Node { // [..., 16] → [..., 32]: low nibbles then high
		return Concatenate([]*Node{mod(qs, 16), div(qs, 16)}, last)
	}
	switch t {
	case quant.Q4_0:
		d := fp16(0)
		return Mul(f32(Sub(nibbles(bytesAt(2, 18)), i32(8))), d)
	case quant.Q4_1:
		d, m := fp16(0), fp16(2)
		return Add(Mul(f32(nibbles(bytesAt(4, 20))), d), m)
	case quant.Q8_0:
		q := bytesAt(2, 34)
		q = Where(GreaterOrEqual(q, i32(128)), Sub(q, i32(256)), q)
		return Mul(f32(q), fp16(0))
	case quant.Q4_K:
		d, dmin := fp16(0), fp16(2)
		sc := func(j int) *Node { return bytesAt(4+j, 5+j) } // scales[j]
		var scs, mins []*Node
		for j := range 8 { // get_scale_min_k4
			if j < 4 {
				scs = append(scs, mod(sc(j), 64))
				mins = append(mins, mod(sc(j+4), 64))
				continue
			}
			scs = append(scs, Add(mod(sc(j+4), 16), Mul(div(sc(j-4), 64), i32(16))))
			mins = append(mins, Add(div(sc(j+4), 16), Mul(div(sc(j), 64), i32(16))))
		}
		d1 := Mul(d, f32(Concatenate(scs, last)))     // [..., nb, 8]
		m1 := Mul(dmin, f32(Concatenate(mins, last))) // [..., nb, 8]
		dims := slices.Clone(b.Shape().Dimensions[:last])
		qs := Reshape(bytesAt(16, 144), append(slices.Clone(dims), 4, 1, 32)...)
		// Sub-block 2j is qs[j]'s low nibbles, 2j+1 its high ones.
		q := Reshape(Concatenate([]*Node{mod(qs, 16), div(qs, 16)}, last+1), append(slices.Clone(dims), 8, 32)...)
		y := Sub(Mul(ExpandAxes(d1, -1), f32(q)), ExpandAxes(m1, -1))
		return Reshape(y, append(dims, 256)...)
	}
	panic(fmt.Sprintf("model: no decoder for %v blocks", t))
}
