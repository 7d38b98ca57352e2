package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// ErrFormat is returned (wrapped in a *FormatError) for a file that is not
// a well-formed GGUF file: a wrong magic or version, a truncated header, a
// length or count the file cannot hold, a tensor outside the data section.
var ErrFormat = errors.New("not a valid GGUF file")

// FormatError names the file and the part of it that is wrong.
type FormatError struct {
	// Path is the file; Field the header part ("magic", "metadata key
	// tokenizer.ggml.tokens", "tensor blk.0.attn_q.weight", ...).
	Path, Field string
	// Err says what is wrong with it; it wraps ErrFormat or ErrUnsupported.
	Err error
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("gguf: %s: %s: %v", e.Path, e.Field, e.Err)
}

func (e *FormatError) Unwrap() error { return e.Err }

// KV is one metadata entry. Value is one of uint8, int8, uint16, int16,
// uint32, int32, uint64, int64, float32, float64, bool, string, or a
// slice of one of them ([]string, []int32, []float32, ...); an array of
// arrays is []any.
type KV struct {
	Key   string
	Value any
}

// TensorInfo describes one tensor of a file: its GGUF name, its shape in
// Hugging Face order (outermost first; GGUF stores it reversed) and its
// element type. In a file read by Open, Offset is where its data starts
// (from the beginning of the file) and Size its length in bytes.
type TensorInfo struct {
	Name   string
	Shape  []int
	Type   TensorType
	Offset int64
	Size   int64
}

func (t TensorInfo) numel() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is an open GGUF file: the header (metadata and tensor
// descriptions), read and checked by Open, and the tensor data, read on
// demand. A File is safe for concurrent reads; Close it when done.
type File struct {
	// Path is the file's path as given to Open.
	Path string
	// Version is the GGUF version (2 or 3).
	Version uint32
	// Alignment is the data section's alignment (general.alignment, default 32).
	Alignment int
	// Metadata holds the key–value entries in file order.
	Metadata []KV
	// Tensors describes the tensors in file order.
	Tensors []TensorInfo

	f       *os.File
	size    int64
	meta    map[string]int
	tensors map[string]int
}

// Limits of the header reader: far above any real model, and low enough
// that a hostile header cannot make Open allocate more than a small
// multiple of the file's size.
const (
	maxDims       = 4 // GGML_MAX_DIMS
	maxKeyLen     = 1 << 16
	maxArrayDepth = 4
	maxElements   = 1 << 50
)

// Open reads and checks the header of the GGUF file at path: the magic,
// a version of 2 or 3, every metadata entry and tensor description, with
// every length and count checked against what the file can hold before
// anything is allocated, and every tensor's data inside the file. Errors
// are *FormatError (wrapping ErrFormat) or the operating system's.
func Open(path string) (*File, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("gguf: %w", err)
	}
	g := &File{Path: path, f: f, size: st.Size(), Alignment: alignment}
	if err := g.readHeader(); err != nil {
		f.Close()
		return nil, err
	}
	return g, nil
}

// Close closes the file.
func (g *File) Close() error { return g.f.Close() }

// decoder reads little-endian GGUF values, tracking the position so that
// every length is checked against the bytes left in the file.
type decoder struct {
	r     *bufio.Reader
	pos   int64
	size  int64
	path  string
	field string
	buf   [8]byte
}

func (d *decoder) fail(format string, args ...any) error {
	return &FormatError{Path: d.path, Field: d.field, Err: fmt.Errorf("%w: "+format, append([]any{ErrFormat}, args...)...)}
}

func (d *decoder) left() int64 { return d.size - d.pos }

func (d *decoder) read(n int) ([]byte, error) {
	if int64(n) > d.left() {
		return nil, d.fail("the file ends %d bytes early (truncated?)", int64(n)-d.left())
	}
	var b []byte
	if n <= len(d.buf) {
		b = d.buf[:n]
	} else {
		b = make([]byte, n)
	}
	if _, err := io.ReadFull(d.r, b); err != nil {
		return nil, d.fail("read: %v", err)
	}
	d.pos += int64(n)
	return b, nil
}

func (d *decoder) u8() (uint8, error) {
	b, err := d.read(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (d *decoder) u16() (uint16, error) {
	b, err := d.read(2)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

func (d *decoder) u32() (uint32, error) {
	b, err := d.read(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64() (uint64, error) {
	b, err := d.read(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count reads a 64-bit count of items that take at least minBytes each
// in the file, refusing one the rest of the file cannot hold.
func (d *decoder) count(what string, minBytes int64) (int, error) {
	n, err := d.u64()
	if err != nil {
		return 0, err
	}
	if n > uint64(d.left()/minBytes) {
		return 0, d.fail("%s %d: the %d bytes left in the file cannot hold that many (truncated?)", what, n, d.left())
	}
	return int(n), nil
}

func (d *decoder) str(limit int64) (string, error) {
	n, err := d.u64()
	if err != nil {
		return "", err
	}
	if n > uint64(d.left()) {
		return "", d.fail("string of %d bytes, but %d bytes are left in the file (truncated?)", n, d.left())
	}
	if n > uint64(limit) {
		return "", d.fail("string of %d bytes (at most %d here)", n, limit)
	}
	b, err := d.read(int(n))
	return string(b), err
}

// valueSize is the bytes one value of type t takes at least.
func valueSize(t valueType) int64 {
	switch t {
	case typeUint8, typeInt8, typeBool:
		return 1
	case typeUint16, typeInt16:
		return 2
	case typeUint32, typeInt32, typeFloat32:
		return 4
	case typeString, typeUint64, typeInt64, typeFloat64:
		return 8
	case typeArray:
		return 12
	}
	return 1
}

func (d *decoder) value(t valueType, depth int) (any, error) {
	switch t {
	case typeUint8:
		return d.u8()
	case typeInt8:
		v, err := d.u8()
		return int8(v), err
	case typeUint16:
		return d.u16()
	case typeInt16:
		v, err := d.u16()
		return int16(v), err
	case typeUint32:
		return d.u32()
	case typeInt32:
		v, err := d.u32()
		return int32(v), err
	case typeFloat32:
		v, err := d.u32()
		return math.Float32frombits(v), err
	case typeUint64:
		return d.u64()
	case typeInt64:
		v, err := d.u64()
		return int64(v), err
	case typeFloat64:
		v, err := d.u64()
		return math.Float64frombits(v), err
	case typeBool:
		v, err := d.u8()
		if err == nil && v > 1 {
			return nil, d.fail("bool value %d", v)
		}
		return v == 1, err
	case typeString:
		return d.str(d.left())
	case typeArray:
		if depth >= maxArrayDepth {
			return nil, d.fail("arrays nested more than %d deep", maxArrayDepth)
		}
		et, err := d.u32()
		if err != nil {
			return nil, err
		}
		if !knownValueType(valueType(et)) {
			return nil, d.fail("array of unknown value type %d", et)
		}
		n, err := d.count("array length", valueSize(valueType(et)))
		if err != nil {
			return nil, err
		}
		return d.array(valueType(et), n, depth+1)
	}
	return nil, d.fail("unknown value type %d", uint32(t))
}

// array reads n values of type t into a typed slice.
func (d *decoder) array(t valueType, n, depth int) (any, error) {
	switch t {
	case typeString:
		return arrayOf[string](d, t, n, depth)
	case typeUint8:
		return arrayOf[uint8](d, t, n, depth)
	case typeInt8:
		return arrayOf[int8](d, t, n, depth)
	case typeUint16:
		return arrayOf[uint16](d, t, n, depth)
	case typeInt16:
		return arrayOf[int16](d, t, n, depth)
	case typeUint32:
		return arrayOf[uint32](d, t, n, depth)
	case typeInt32:
		return arrayOf[int32](d, t, n, depth)
	case typeFloat32:
		return arrayOf[float32](d, t, n, depth)
	case typeUint64:
		return arrayOf[uint64](d, t, n, depth)
	case typeInt64:
		return arrayOf[int64](d, t, n, depth)
	case typeFloat64:
		return arrayOf[float64](d, t, n, depth)
	case typeBool:
		return arrayOf[bool](d, t, n, depth)
	}
	return arrayOf[any](d, t, n, depth)
}

func arrayOf[T any](d *decoder, t valueType, n, depth int) ([]T, error) {
	out := make([]T, n)
	for i := range out {
		v, err := d.value(t, depth)
		if err != nil {
			return nil, err
		}
		out[i] = v.(T)
	}
	return out, nil
}

func knownValueType(t valueType) bool { return t <= typeFloat64 }

func (g *File) readHeader() error {
	d := &decoder{r: bufio.NewReaderSize(io.NewSectionReader(g.f, 0, g.size), 1<<20), size: g.size, path: g.Path, field: "magic"}
	m, err := d.u32()
	if err != nil {
		return err
	}
	if m != magic {
		return d.fail("magic %q, want \"GGUF\"", binary.LittleEndian.AppendUint32(nil, m))
	}
	d.field = "version"
	v, err := d.u32()
	if err != nil {
		return err
	}
	switch {
	case v == 2 || v == 3:
	case v == 1:
		return &FormatError{g.Path, "version", fmt.Errorf("%w: GGUF version 1 (32-bit counts, 2023): convert it again with a current llama.cpp", ErrUnsupported)}
	case v != 0 && v&0xffff == 0:
		return &FormatError{g.Path, "version", fmt.Errorf("%w: a big-endian GGUF file (version %d byte-swapped)", ErrUnsupported, v>>24)}
	default:
		return &FormatError{g.Path, "version", fmt.Errorf("%w: GGUF version %d (grpokit reads 2 and 3)", ErrUnsupported, v)}
	}
	g.Version = v
	d.field = "tensor count"
	nt, err := d.count("tensor count", 32) // name length, dims count, one dim, type, offset
	if err != nil {
		return err
	}
	d.field = "metadata count"
	nkv, err := d.count("metadata count", 13) // key length, type, one byte
	if err != nil {
		return err
	}
	g.meta = make(map[string]int, nkv)
	g.Metadata = make([]KV, 0, nkv)
	for i := range nkv {
		d.field = fmt.Sprintf("metadata entry %d", i)
		key, err := d.str(maxKeyLen)
		if err != nil {
			return err
		}
		d.field = "metadata key " + quoteKey(key)
		if _, dup := g.meta[key]; dup {
			return d.fail("the key appears twice")
		}
		t, err := d.u32()
		if err != nil {
			return err
		}
		val, err := d.value(valueType(t), 0)
		if err != nil {
			return err
		}
		g.meta[key] = len(g.Metadata)
		g.Metadata = append(g.Metadata, KV{key, val})
	}
	if a, ok := g.Lookup("general.alignment"); ok {
		d.field = "metadata key general.alignment"
		u, ok := a.(uint32)
		if !ok || u == 0 || u&(u-1) != 0 || u > 1<<16 {
			return d.fail("alignment %v: want a power of two up to 65536 (a uint32)", a)
		}
		g.Alignment = int(u)
	}
	g.tensors = make(map[string]int, nt)
	g.Tensors = make([]TensorInfo, 0, nt)
	for i := range nt {
		d.field = fmt.Sprintf("tensor %d", i)
		name, err := d.str(maxKeyLen)
		if err != nil {
			return err
		}
		d.field = "tensor " + quoteKey(name)
		if _, dup := g.tensors[name]; dup {
			return d.fail("the name appears twice")
		}
		nd, err := d.u32()
		if err != nil {
			return err
		}
		if nd == 0 || nd > maxDims {
			return d.fail("%d dimensions (want 1 to %d)", nd, maxDims)
		}
		shape := make([]int, nd)
		numel := uint64(1)
		for j := range nd {
			n, err := d.u64()
			if err != nil {
				return err
			}
			if n == 0 || n > maxElements/numel { // numel·n ≤ maxElements, without overflowing
				return d.fail("dimension %d is %d: the tensor's size is absurd", j, n)
			}
			numel *= n
			shape[int(nd)-1-int(j)] = int(n) // ggml's ne[0] is the innermost
		}
		t, err := d.u32()
		if err != nil {
			return err
		}
		tt := TensorType(t)
		elems, bytes, ok := tt.block()
		if !ok {
			return &FormatError{g.Path, d.field, fmt.Errorf("%w: tensor type %d, which ggml does not define", ErrUnsupported, t)}
		}
		if inner := shape[len(shape)-1]; inner%elems != 0 {
			return d.fail("type %s stores blocks of %d values, but a row holds %d", tt, elems, inner)
		}
		off, err := d.u64()
		if err != nil {
			return err
		}
		g.tensors[name] = len(g.Tensors)
		g.Tensors = append(g.Tensors, TensorInfo{Name: name, Shape: shape, Type: tt,
			Offset: int64(off & (1<<62 - 1)), Size: int64(numel/uint64(elems)) * int64(bytes)})
		if off >= 1<<62 {
			return d.fail("data offset %d is beyond any file", off)
		}
	}
	// The data section starts at the next multiple of the alignment.
	start := (d.pos + int64(g.Alignment) - 1) / int64(g.Alignment) * int64(g.Alignment)
	for i := range g.Tensors {
		t := &g.Tensors[i]
		if t.Offset%int64(g.Alignment) != 0 {
			return &FormatError{g.Path, "tensor " + quoteKey(t.Name), fmt.Errorf("%w: data offset %d is not a multiple of the alignment %d", ErrFormat, t.Offset, g.Alignment)}
		}
		t.Offset += start
		if t.Offset > g.size || t.Size > g.size-t.Offset {
			return &FormatError{g.Path, "tensor " + quoteKey(t.Name), fmt.Errorf("%w: its %d bytes of %s data (shape %v) end at byte %d, past the end of the %d-byte file (truncated?)",
				ErrFormat, t.Size, t.Type, t.Shape, t.Offset+t.Size, g.size)}
		}
	}
	return nil
}

// quoteKey prints a key or tensor name for an error, quoting one that
// holds anything but printable ASCII.
func quoteKey(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	for _, r := range s {
		if r < 0x21 || r > 0x7e {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}

// Lookup returns the value of a metadata key.
func (g *File) Lookup(key string) (any, bool) {
	i, ok := g.meta[key]
	if !ok {
		return nil, false
	}
	return g.Metadata[i].Value, true
}

// keyError is the error for a missing or mistyped metadata key.
func (g *File) keyError(key, format string, args ...any) error {
	return &FormatError{Path: g.Path, Field: "metadata key " + key, Err: fmt.Errorf("%w: "+format, append([]any{ErrFormat}, args...)...)}
}

// String returns a string-valued key; ok is false when the key is absent,
// and err is set when it holds something else.
func (g *File) String(key string) (s string, ok bool, err error) {
	v, ok := g.Lookup(key)
	if !ok {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", true, g.keyError(key, "a %T, want a string", v)
	}
	return s, true, nil
}

// Int returns an integer-valued key of any of GGUF's integer types.
func (g *File) Int(key string) (n int64, ok bool, err error) {
	v, ok := g.Lookup(key)
	if !ok {
		return 0, false, nil
	}
	switch x := v.(type) {
	case uint8:
		return int64(x), true, nil
	case int8:
		return int64(x), true, nil
	case uint16:
		return int64(x), true, nil
	case int16:
		return int64(x), true, nil
	case uint32:
		return int64(x), true, nil
	case int32:
		return int64(x), true, nil
	case int64:
		return x, true, nil
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true, nil
		}
	}
	return 0, true, g.keyError(key, "%v (a %T), want an integer", v, v)
}

// Float returns a number-valued key (a float or an integer) as float64.
func (g *File) Float(key string) (x float64, ok bool, err error) {
	v, ok := g.Lookup(key)
	if !ok {
		return 0, false, nil
	}
	switch f := v.(type) {
	case float32:
		return float64(f), true, nil
	case float64:
		return f, true, nil
	}
	n, _, err := g.Int(key)
	if err != nil {
		return 0, true, g.keyError(key, "%v (a %T), want a number", v, v)
	}
	return float64(n), true, nil
}

// Bool returns a bool-valued key.
func (g *File) Bool(key string) (b bool, ok bool, err error) {
	v, ok := g.Lookup(key)
	if !ok {
		return false, false, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, true, g.keyError(key, "a %T, want a bool", v)
	}
	return b, true, nil
}

// Tensor returns the description of the named tensor.
func (g *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := g.tensors[name]
	if !ok {
		return TensorInfo{}, false
	}
	return g.Tensors[i], true
}

// Raw reads the named tensor's data as stored (blocks for a quantized
// type).
func (g *File) Raw(name string) ([]byte, TensorInfo, error) {
	t, ok := g.Tensor(name)
	if !ok {
		return nil, t, fmt.Errorf("gguf: %s: no tensor %q", g.Path, name)
	}
	b := make([]byte, t.Size)
	if _, err := g.f.ReadAt(b, t.Offset); err != nil {
		return nil, t, fmt.Errorf("gguf: %s: read tensor %s: %w", g.Path, name, err)
	}
	return b, t, nil
}

// Float32 reads the named tensor and dequantizes it to float32 exactly as
// ggml does, row-major in its Hugging Face shape (which it returns too).
// A type grpokit does not dequantize is an error naming the tensor and
// the type, wrapping ErrUnsupported.
func (g *File) Float32(name string) ([]float32, []int, error) {
	b, t, err := g.Raw(name)
	if err != nil {
		return nil, nil, err
	}
	out := make([]float32, t.numel())
	if err := Dequantize(t.Type, b, out); err != nil {
		return nil, nil, fmt.Errorf("gguf: %s: tensor %s: %w", g.Path, name, err)
	}
	return out, t.Shape, nil
}

// openRegular opens path for reading only when it is a regular file: a
// named pipe or a device given as a model would block the open or never
// end.
func openRegular(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, &FormatError{Path: path, Field: "file", Err: fmt.Errorf("%w: not a regular file (%s)", ErrFormat, st.Mode().Type())}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	return f, nil
}
