package model

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/x448/float16"
)

// readChunk is how many bytes of a tensor readDirect reads at a time (a
// variable for tests).
var readChunk = 4 << 20

// readDirect reads tensor name of the file into a new tensor of dtype
// float32 or bfloat16, decoding the file's F32, BF16 or F16 values a few
// MB at a time straight into the tensor's memory (a backend buffer where
// b shares buffers with Go: onBackend). Why: reading a whole tensor as raw
// bytes, then as float32 values, then rounding those to bfloat16 held
// three extra copies of it; the embedding of a 128k-token vocabulary
// (0.5 GB in bf16, 2.1 GB at 8B) made the load the run's peak.
func (s *safetensorsFile) readDirect(b backends.Backend, name string, dtype dtypes.DType) (*tensors.Tensor, error) {
	ti, n, err := s.tensorValues(name)
	if err != nil {
		return nil, err
	}
	read := func(fill func(at int, raw []byte)) error { return s.readChunks(name, ti, n, fill) }
	switch dtype {
	case dtypes.Float32:
		return fillTensor(b, ti.Shape, func(dst []float32) error {
			return read(func(at int, raw []byte) { decodeInto(ti.DType, raw, dst[at:]) })
		})
	case dtypes.BFloat16:
		return fillTensor(b, ti.Shape, func(dst []bfloat16.BFloat16) error {
			var f []float32
			return read(func(at int, raw []byte) {
				if ti.DType == "BF16" { // the bits as they are
					for i := range len(raw) / 2 {
						dst[at+i] = bfloat16.BFloat16(binary.LittleEndian.Uint16(raw[2*i:]))
					}
					return
				}
				f = decodeInto(ti.DType, raw, f[:0])
				roundBF16(f, dst[at:])
			})
		})
	}
	return nil, fmt.Errorf("model: %s: %q: cannot read into %s", s.path, name, dtype)
}

// decodeInto converts raw F32, BF16 or F16 values to float32 in dst (a new
// slice when its capacity is too small) and returns the values written.
func decodeInto(dtype string, raw []byte, dst []float32) []float32 {
	size := 4
	if dtype != "F32" {
		size = 2
	}
	n := len(raw) / size
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	switch dtype {
	case "F32":
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case "BF16":
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
		}
	case "F16":
		for i := range dst {
			dst[i] = float16.Frombits(binary.LittleEndian.Uint16(raw[2*i:])).Float32()
		}
	default:
		panic("model: unreachable dtype " + dtype)
	}
	return dst
}

// fillTensor returns a tensor of shape dims whose values fill writes,
// in a backend buffer when b shares its buffers with Go (see onBackend),
// else on the host.
func fillTensor[T dtypes.Supported](b backends.Backend, dims []int, fill func([]T) error) (*tensors.Tensor, error) {
	if b != nil && b.HasSharedBuffers() {
		buf, flat, err := b.NewSharedBuffer(0, shapes.Make(dtypes.FromGenericsType[T](), dims...))
		if err == nil {
			if dst, ok := flat.([]T); ok {
				if err := fill(dst); err != nil {
					_ = b.BufferFinalize(buf)
					return nil, err
				}
				if t, err := tensors.FromBuffer(b, buf); err == nil {
					return t, nil
				}
			}
			_ = b.BufferFinalize(buf)
		}
	}
	n := 1
	for _, d := range dims {
		n *= d
	}
	data := make([]T, n)
	if err := fill(data); err != nil {
		return nil, err
	}
	return tensors.FromFlatDataAndDimensions(data, dims...), nil
}

// loadDirect reads weight name (fileName in f) held as format "f32" or
// "bf16" (storeAs's formats) with readDirect.
func (m *Model) loadDirect(name string, f *safetensorsFile, fileName, format string) error {
	scope, v, err := ScopeOf(name)
	if err != nil {
		return err
	}
	dt := dtypes.Float32
	if format == "bf16" {
		if v != "weight" {
			return fmt.Errorf("model: %s: only .weight tensors are stored in %s", name, format)
		}
		dt = dtypes.BFloat16
	}
	t, err := f.readDirect(m.backend, fileName, dt)
	if err != nil {
		return err
	}
	if v == "weight" {
		for _, x := range []string{varNF4, varAbsmax, varAbsmaxQ, varAbsmax2, varAbsmaxOf, varInt8, varRowScale} {
			m.deleteVar(scope, x)
		}
	}
	m.putVar(scope, v, t, format == "f32")
	return nil
}

// readF32Into reads tensor name as float32 values into dst (a new slice
// when its capacity is too small), a few MB of the file at a time, and
// returns the values: a loader that quantizes tensor after tensor reuses
// one buffer instead of leaving each tensor's raw bytes and float32
// values as garbage.
func (s *safetensorsFile) readF32Into(name string, dst []float32) ([]float32, error) {
	ti, n, err := s.tensorValues(name)
	if err != nil {
		return nil, err
	}
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	if err := s.readChunks(name, ti, n, func(at int, raw []byte) { decodeInto(ti.DType, raw, dst[at:]) }); err != nil {
		return nil, err
	}
	return dst, nil
}

// tensorValues returns tensor name's header entry and its number of values.
func (s *safetensorsFile) tensorValues(name string) (TensorInfo, int, error) {
	ti, ok := s.header.Tensors[name]
	if !ok {
		return TensorInfo{}, 0, fmt.Errorf("model: %s: no tensor %q", s.path, name)
	}
	return ti, (ti.DataOffsets[1] - ti.DataOffsets[0]) / valueSize(ti.DType), nil
}

// valueSize is the bytes per value of a F32, BF16 or F16 tensor.
func valueSize(dtype string) int {
	if dtype == "BF16" || dtype == "F16" {
		return 2
	}
	return 4
}

// readChunks reads the n values of tensor ti (named name) a few MB at a
// time and hands each chunk of whole values to fill with the index of its
// first value: one buffer of at most readChunk bytes, never the tensor.
func (s *safetensorsFile) readChunks(name string, ti TensorInfo, n int, fill func(at int, raw []byte)) error {
	size := valueSize(ti.DType)
	buf := make([]byte, min(readChunk, n*size))
	for at := 0; at < n; {
		k := min(len(buf)/size, n-at)
		raw := buf[:k*size]
		if _, err := s.f.ReadAt(raw, s.header.DataStart+int64(ti.DataOffsets[0]+at*size)); err != nil {
			return fmt.Errorf("model: %s: read %q: %w", s.path, name, err)
		}
		fill(at, raw)
		at += k
	}
	return nil
}
