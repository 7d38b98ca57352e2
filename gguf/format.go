package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// The GGUF v3 container: a header, key–value metadata, tensor
// descriptions, then the tensor data, each tensor aligned to 32 bytes.
const (
	magic     = 0x46554747 // "GGUF" read as a little-endian uint32
	version   = 3
	alignment = 32
)

// valueType is a metadata value's type tag (gguf_type).
type valueType uint32

const (
	typeUint8   valueType = 0
	typeInt8    valueType = 1
	typeUint16  valueType = 2
	typeInt16   valueType = 3
	typeUint32  valueType = 4
	typeInt32   valueType = 5
	typeFloat32 valueType = 6
	typeBool    valueType = 7
	typeString  valueType = 8
	typeArray   valueType = 9
	typeUint64  valueType = 10
	typeInt64   valueType = 11
	typeFloat64 valueType = 12
)

// kv is one metadata entry. Value is uint32, int32, float32, bool, string,
// []string, []int32, []float32 or []bool.
type kv struct {
	Key   string
	Value any
}

// TensorType is ggml's type of a tensor's elements (enum ggml_type).
type TensorType uint32

// The tensor types grpokit names. Read dequantizes F32, F16, BF16, the
// 32-value blocks Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and the 256-value K-quants
// Q2_K to Q6_K; Write stores F32, F16, BF16, Q8_0 and Q4_0.
const (
	TypeF32  TensorType = 0
	TypeF16  TensorType = 1
	TypeQ4_0 TensorType = 2
	TypeQ4_1 TensorType = 3
	TypeQ5_0 TensorType = 6
	TypeQ5_1 TensorType = 7
	TypeQ8_0 TensorType = 8
	TypeQ8_1 TensorType = 9
	TypeQ2_K TensorType = 10
	TypeQ3_K TensorType = 11
	TypeQ4_K TensorType = 12
	TypeQ5_K TensorType = 13
	TypeQ6_K TensorType = 14
	TypeQ8_K TensorType = 15
	TypeBF16 TensorType = 30
)

// Short names used by the writer.
const (
	tF32  = TypeF32
	tF16  = TypeF16
	tQ4_0 = TypeQ4_0
	tQ8_0 = TypeQ8_0
	tBF16 = TypeBF16
)

// typeInfo is a ggml type's name and block layout: elems values in bytes
// bytes (ggml's type_traits blck_size and type_size).
type typeInfo struct {
	name         string
	elems, bytes int
}

// typeTable lists every type ggml defines (ggml.h, ggml_type), so a file
// holding one grpokit cannot dequantize still parses and the error names
// the type; the sizes are those of the gguf package's GGML_QUANT_SIZES
// (gguf 0.19.0).
var typeTable = map[TensorType]typeInfo{
	0: {"F32", 1, 4}, 1: {"F16", 1, 2}, 2: {"Q4_0", 32, 18}, 3: {"Q4_1", 32, 20},
	6: {"Q5_0", 32, 22}, 7: {"Q5_1", 32, 24}, 8: {"Q8_0", 32, 34}, 9: {"Q8_1", 32, 40},
	10: {"Q2_K", 256, 84}, 11: {"Q3_K", 256, 110}, 12: {"Q4_K", 256, 144}, 13: {"Q5_K", 256, 176},
	14: {"Q6_K", 256, 210}, 15: {"Q8_K", 256, 292},
	16: {"IQ2_XXS", 256, 66}, 17: {"IQ2_XS", 256, 74}, 18: {"IQ3_XXS", 256, 98}, 19: {"IQ1_S", 256, 50},
	20: {"IQ4_NL", 32, 18}, 21: {"IQ3_S", 256, 110}, 22: {"IQ2_S", 256, 82}, 23: {"IQ4_XS", 256, 136},
	24: {"I8", 1, 1}, 25: {"I16", 1, 2}, 26: {"I32", 1, 4}, 27: {"I64", 1, 8}, 28: {"F64", 1, 8},
	29: {"IQ1_M", 256, 56}, 30: {"BF16", 1, 2}, 34: {"TQ1_0", 256, 54}, 35: {"TQ2_0", 256, 66},
	39: {"MXFP4", 32, 17}, 40: {"NVFP4", 64, 36}, 41: {"Q1_0", 128, 18},
}

func (t TensorType) String() string {
	if ti, ok := typeTable[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("ggml_type(%d)", uint32(t))
}

// block returns the number of elements one block of t holds and its size
// in bytes; ok is false for a type ggml does not define.
func (t TensorType) block() (elems, bytes int, ok bool) {
	ti, ok := typeTable[t]
	return ti.elems, ti.bytes, ok
}

// size is the number of bytes n elements of t take (n a multiple of the
// block size; t a known type).
func (t TensorType) size(n int) int64 {
	e, b, _ := t.block()
	return int64(n/e) * int64(b)
}

// encoder writes little-endian GGUF values to a buffered writer, keeping
// the first error and the number of bytes written.
type encoder struct {
	w   *bufio.Writer
	n   int64
	err error
}

func newEncoder(w io.Writer) *encoder { return &encoder{w: bufio.NewWriterSize(w, 1<<20)} }

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	var n int
	n, e.err = e.w.Write(b)
	e.n += int64(n)
}

func (e *encoder) u32(v uint32) { e.bytes(binary.LittleEndian.AppendUint32(nil, v)) }
func (e *encoder) u64(v uint64) { e.bytes(binary.LittleEndian.AppendUint64(nil, v)) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.bytes([]byte(s)) }

func (e *encoder) pad() {
	if r := e.n % alignment; r != 0 {
		e.bytes(make([]byte, alignment-r))
	}
}

func (e *encoder) flush() error {
	if e.err == nil {
		e.err = e.w.Flush()
	}
	return e.err
}

// value writes a metadata value with its type tag.
func (e *encoder) value(v any) error {
	switch v := v.(type) {
	case uint32:
		e.u32(uint32(typeUint32))
		e.u32(v)
	case int32:
		e.u32(uint32(typeInt32))
		e.u32(uint32(v))
	case float32:
		e.u32(uint32(typeFloat32))
		e.u32(math.Float32bits(v))
	case bool:
		e.u32(uint32(typeBool))
		e.bytes([]byte{boolByte(v)})
	case string:
		e.u32(uint32(typeString))
		e.str(v)
	case []string:
		e.u32(uint32(typeArray))
		e.u32(uint32(typeString))
		e.u64(uint64(len(v)))
		for _, s := range v {
			e.str(s)
		}
	case []int32:
		e.u32(uint32(typeArray))
		e.u32(uint32(typeInt32))
		e.u64(uint64(len(v)))
		buf := make([]byte, 0, 4*len(v))
		for _, x := range v {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(x))
		}
		e.bytes(buf)
	case []float32:
		e.u32(uint32(typeArray))
		e.u32(uint32(typeFloat32))
		e.u64(uint64(len(v)))
		buf := make([]byte, 0, 4*len(v))
		for _, x := range v {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
		e.bytes(buf)
	case []bool:
		e.u32(uint32(typeArray))
		e.u32(uint32(typeBool))
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.bytes([]byte{boolByte(x)})
		}
	default:
		return fmt.Errorf("gguf: metadata value of type %T", v)
	}
	return nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// header writes everything before the tensor data: magic, version, the
// counts, the metadata, the tensor descriptions with their offsets, and
// the padding up to the data section.
func (e *encoder) header(meta []kv, tensors []TensorInfo) error {
	e.u32(magic)
	e.u32(version)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(meta)))
	for _, m := range meta {
		e.str(m.Key)
		if err := e.value(m.Value); err != nil {
			return fmt.Errorf("%w (key %s)", err, m.Key)
		}
	}
	var off int64
	for _, t := range tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for i := len(t.Shape) - 1; i >= 0; i-- { // ggml's ne[0] is the innermost dimension
			e.u64(uint64(t.Shape[i]))
		}
		e.u32(uint32(t.Type))
		e.u64(uint64(off))
		off += t.Type.size(t.numel())
		if r := off % alignment; r != 0 {
			off += alignment - r
		}
	}
	e.pad()
	return e.err
}
