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
	typeInt32   valueType = 5
	typeUint32  valueType = 4
	typeFloat32 valueType = 6
	typeBool    valueType = 7
	typeString  valueType = 8
	typeArray   valueType = 9
)

// kv is one metadata entry. Value is uint32, int32, float32, bool, string,
// []string, []int32, []float32 or []bool.
type kv struct {
	Key   string
	Value any
}

// tensorType is ggml's type of a tensor's elements.
type tensorType uint32

const (
	tF32  tensorType = 0
	tF16  tensorType = 1
	tQ4_0 tensorType = 2
	tQ8_0 tensorType = 8
	tBF16 tensorType = 30
)

func (t tensorType) String() string {
	switch t {
	case tF32:
		return "F32"
	case tF16:
		return "F16"
	case tQ4_0:
		return "Q4_0"
	case tQ8_0:
		return "Q8_0"
	case tBF16:
		return "BF16"
	}
	return fmt.Sprintf("ggml_type(%d)", uint32(t))
}

// block returns the number of elements one block of t holds and its size
// in bytes.
func (t tensorType) block() (elems, bytes int) {
	switch t {
	case tF32:
		return 1, 4
	case tF16, tBF16:
		return 1, 2
	case tQ8_0:
		return 32, 34
	case tQ4_0:
		return 32, 18
	}
	panic("gguf: unknown tensor type")
}

// size is the number of bytes n elements of t take (n a multiple of the
// block size).
func (t tensorType) size(n int) int64 {
	e, b := t.block()
	return int64(n/e) * int64(b)
}

// tensorInfo describes one tensor of the file: its GGUF name, its shape in
// Hugging Face order (outermost first; GGUF stores it reversed), and type.
type tensorInfo struct {
	Name  string
	Shape []int
	Type  tensorType
}

func (t tensorInfo) numel() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
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
func (e *encoder) header(meta []kv, tensors []tensorInfo) error {
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
