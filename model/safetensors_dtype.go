package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/x448/float16"
)

// WriteSafetensorsAs writes tensors to path in dtype "F32", "BF16"
// (rounded to nearest even) or "F16", names sorted, with metadata
// {"format": "pt"}, through a temporary file renamed into place.
func WriteSafetensorsAs(path string, tensors []NamedTensor, dtype string) error {
	size, ok := dtypeSize[dtype]
	if !ok {
		return fmt.Errorf("model: write %s: unsupported dtype %q (want F32, BF16 or F16)", path, dtype)
	}
	sorted := append([]NamedTensor(nil), tensors...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	off := 0
	for _, t := range sorted {
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		if n != len(t.Data) {
			return fmt.Errorf("model: write %s: tensor %q has %d values for shape %v", path, t.Name, len(t.Data), t.Shape)
		}
		if _, dup := header[t.Name]; dup {
			return fmt.Errorf("model: write %s: duplicate tensor %q", path, t.Name)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = TensorInfo{DType: dtype, Shape: shape, DataOffsets: [2]int{off, off + size*n}}
		off += size * n
	}
	js, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("model: write %s: %w", path, err)
	}
	if pad := len(js) % 8; pad != 0 {
		js = append(js, []byte(strings.Repeat(" ", 8-pad))...)
	}
	var buf bytes.Buffer
	buf.Grow(8 + len(js) + off)
	binary.Write(&buf, binary.LittleEndian, uint64(len(js)))
	buf.Write(js)
	var b [4]byte
	for _, t := range sorted {
		for _, v := range t.Data {
			switch dtype {
			case "F32":
				binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
			case "BF16":
				binary.LittleEndian.PutUint16(b[:], bf16Bits(v))
			case "F16":
				binary.LittleEndian.PutUint16(b[:], float16.Fromfloat32(v).Bits())
			}
			buf.Write(b[:size])
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("model: %w", err)
	}
	return nil
}

// bf16Bits rounds v to bfloat16 (nearest, ties to even; NaN stays NaN).
func bf16Bits(v float32) uint16 {
	u := math.Float32bits(v)
	if v != v {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// WeightsDType returns the dtype ("F32", "BF16" or "F16") in which the
// model folder dir stores model.embed_tokens.weight (the first shard's
// first tensor when that name is absent): the dtype a merged copy should
// be written in.
func WeightsDType(dir string) (string, error) {
	files, err := weightFiles(dir, nil)
	if err != nil {
		return "", err
	}
	s, err := openSafetensors(files[0])
	if err != nil {
		return "", err
	}
	defer s.Close()
	if ti, ok := s.header.Tensors["model.embed_tokens.weight"]; ok {
		return ti.DType, nil
	}
	names := make([]string, 0, len(s.header.Tensors))
	for n := range s.header.Tensors {
		names = append(names, n)
	}
	if len(names) == 0 {
		return "", fmt.Errorf("model: %s: no tensors", files[0])
	}
	sort.Strings(names)
	return s.header.Tensors[names[0]].DType, nil
}
