package gguf

import (
	"fmt"
	"math"
	"strconv"
)

// lookup.go: reading a File's metadata by key and its tensors by name.

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
		// The shortest decimal that is this float32 (1e-5, not
		// 9.999999747378752e-06), as the config.json it came from said.
		x, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
		return x, true, nil
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
