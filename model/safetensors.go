package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/grpokit/grpokit/internal/regfile"
)

// maxHeaderBytes bounds a safetensors JSON header (the format's own limit is
// 100 MB); anything larger is treated as a corrupt file.
const maxHeaderBytes = 100 << 20

// TensorInfo is one entry of a safetensors header.
type TensorInfo struct {
	DType       string `json:"dtype"`
	Shape       []int  `json:"shape"`
	DataOffsets [2]int `json:"data_offsets"`
}

// Header is a parsed and validated safetensors header.
type Header struct {
	// Tensors maps each tensor name to its entry.
	Tensors map[string]TensorInfo
	// Metadata is the optional "__metadata__" object.
	Metadata map[string]string
	// DataStart is the file offset of the data section (8 + header length).
	DataStart int64
}

// dtypeSize gives the bytes per element of the dtypes this package reads.
var dtypeSize = map[string]int{"F32": 4, "BF16": 2, "F16": 2}

// ParseSafetensorsHeader parses the header at the start of a safetensors
// file of fileSize bytes (read from r) and validates it strictly: known
// dtypes, byte counts that match shapes, offsets inside the data section,
// no overlaps and no gaps.
func ParseSafetensorsHeader(r io.Reader, fileSize int64) (*Header, error) {
	var lenBuf [8]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, fmt.Errorf("safetensors: read header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxHeaderBytes || int64(n) > fileSize-8 {
		return nil, fmt.Errorf("safetensors: header length %d exceeds file size %d", n, fileSize)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("safetensors: read header: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(buf, &raw); err != nil {
		return nil, fmt.Errorf("safetensors: header is not a JSON object: %w", err)
	}
	h := &Header{Tensors: map[string]TensorInfo{}, DataStart: 8 + int64(n)}
	dataLen := fileSize - h.DataStart
	type span struct {
		name       string
		begin, end int
	}
	var spans []span
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &h.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors: __metadata__: %w", err)
			}
			continue
		}
		var ti TensorInfo
		dec := json.NewDecoder(bytes.NewReader(msg))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ti); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		size, ok := dtypeSize[ti.DType]
		if !ok {
			return nil, fmt.Errorf("safetensors: tensor %q: unsupported dtype %q (want F32, BF16 or F16)", name, ti.DType)
		}
		count := 1
		for _, d := range ti.Shape {
			if d < 0 || (d > 0 && count > (1<<40)/d) {
				return nil, fmt.Errorf("safetensors: tensor %q: bad shape %v", name, ti.Shape)
			}
			count *= d
		}
		b, e := ti.DataOffsets[0], ti.DataOffsets[1]
		if b < 0 || e < b || int64(e) > dataLen {
			return nil, fmt.Errorf("safetensors: tensor %q: data_offsets [%d, %d] outside the %d data bytes", name, b, e, dataLen)
		}
		if e-b != count*size {
			return nil, fmt.Errorf("safetensors: tensor %q: %d bytes for %s shape %v, want %d", name, e-b, ti.DType, ti.Shape, count*size)
		}
		h.Tensors[name] = ti
		spans = append(spans, span{name, b, e})
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].begin != spans[j].begin {
			return spans[i].begin < spans[j].begin
		}
		return spans[i].end < spans[j].end
	})
	for i := 1; i < len(spans); i++ {
		if spans[i].begin < spans[i-1].end {
			return nil, fmt.Errorf("safetensors: tensors %q and %q overlap", spans[i-1].name, spans[i].name)
		}
	}
	return h, nil
}

// safetensorsFile is an open, validated safetensors file.
type safetensorsFile struct {
	path   string
	f      *os.File
	header *Header
}

func openSafetensors(path string) (*safetensorsFile, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("model: %w", err)
	}
	h, err := ParseSafetensorsHeader(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("model: %s: %w", path, err)
	}
	return &safetensorsFile{path: path, f: f, header: h}, nil
}

func (s *safetensorsFile) Close() error { return s.f.Close() }

// readF32 reads tensor name converted to float32 (F32, BF16 and F16 are
// converted here on the Go side).
func (s *safetensorsFile) readF32(name string) ([]float32, []int, error) {
	ti, ok := s.header.Tensors[name]
	if !ok {
		return nil, nil, fmt.Errorf("model: %s: no tensor %q", s.path, name)
	}
	raw := make([]byte, ti.DataOffsets[1]-ti.DataOffsets[0])
	if _, err := s.f.ReadAt(raw, s.header.DataStart+int64(ti.DataOffsets[0])); err != nil {
		return nil, nil, fmt.Errorf("model: %s: read %q: %w", s.path, name, err)
	}
	return decodeF32(ti.DType, raw), ti.Shape, nil
}

func decodeF32(dtype string, raw []byte) []float32 {
	return decodeInto(dtype, raw, nil)
}

// NamedTensor is a float32 tensor to write with WriteSafetensors.
type NamedTensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// WriteSafetensors writes tensors as F32 to path (names sorted, like the
// Python library), with metadata {"format": "pt"}, through a temporary file
// renamed into place. It is WriteSafetensorsAs with dtype "F32".
func WriteSafetensors(path string, tensors []NamedTensor) error {
	return WriteSafetensorsAs(path, tensors, "F32")
}

// ReadSafetensors reads every tensor of a safetensors file as float32.
func ReadSafetensors(path string) ([]NamedTensor, error) {
	s, err := openSafetensors(path)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	names := make([]string, 0, len(s.header.Tensors))
	for n := range s.header.Tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]NamedTensor, 0, len(names))
	for _, n := range names {
		data, shape, err := s.readF32(n)
		if err != nil {
			return nil, err
		}
		out = append(out, NamedTensor{Name: n, Shape: shape, Data: data})
	}
	return out, nil
}

var errNoWeights = errors.New("no model.safetensors or model.safetensors.index.json")
