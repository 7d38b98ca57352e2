package model

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/grpokit/grpokit/internal/atomicfile"
	"github.com/grpokit/grpokit/internal/backend"
	"github.com/x448/float16"
)

// WriteSafetensorsAs writes tensors to path in dtype "F32", "BF16"
// (rounded to nearest even) or "F16", names sorted, with metadata
// {"format": "pt"}, through a temporary file renamed into place.
func WriteSafetensorsAs(path string, tensors []NamedTensor, dtype string) error {
	specs := make([]WeightSpec, len(tensors))
	byName := make(map[string][]float32, len(tensors))
	for i, t := range tensors {
		if _, dup := byName[t.Name]; dup {
			return fmt.Errorf("model: write %s: duplicate tensor %q", path, t.Name)
		}
		specs[i], byName[t.Name] = WeightSpec{Name: t.Name, Shape: t.Shape}, t.Data
	}
	return WriteSafetensorsFunc(path, specs, dtype, func(name string) ([]float32, error) { return byName[name], nil })
}

// WriteSafetensorsFunc writes the tensors specs name to path as
// WriteSafetensorsAs does, asking data for one tensor's values at a time:
// only one tensor is held in float32, whatever the file's size (a merged
// 8B model is written with one matrix in memory, not all of them).
func WriteSafetensorsFunc(path string, specs []WeightSpec, dtype string, data func(name string) ([]float32, error)) (err error) {
	size, ok := dtypeSize[dtype]
	if !ok {
		return fmt.Errorf("model: write %s: unsupported dtype %q (want F32, BF16 or F16)", path, dtype)
	}
	sorted := slices.Clone(specs)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	off := 0
	for _, t := range sorted {
		if _, dup := header[t.Name]; dup {
			return fmt.Errorf("model: write %s: duplicate tensor %q", path, t.Name)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = TensorInfo{DType: dtype, Shape: shape, DataOffsets: [2]int{off, off + size*numel(shape)}}
		off += size * numel(shape)
	}
	js, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("model: write %s: %w", path, err)
	}
	if pad := len(js) % 8; pad != 0 {
		js = append(js, []byte(strings.Repeat(" ", 8-pad))...)
	}
	err = atomicfile.Write(path, func(f *os.File) error {
		w := bufio.NewWriterSize(f, 1<<20)
		binary.Write(w, binary.LittleEndian, uint64(len(js)))
		w.Write(js)
		chunk := make([]byte, 0, size<<16) // encoded 64 Ki values at a time
		for _, t := range sorted {
			vals, err := data(t.Name)
			if err != nil {
				return fmt.Errorf("tensor %q: %w", t.Name, err)
			}
			if len(vals) != numel(t.Shape) {
				return fmt.Errorf("tensor %q has %d values for shape %v", t.Name, len(vals), t.Shape)
			}
			for len(vals) > 0 {
				n := min(len(vals), 1<<16)
				chunk = chunk[:0]
				for _, v := range vals[:n] {
					switch dtype {
					case "F32":
						chunk = binary.LittleEndian.AppendUint32(chunk, math.Float32bits(v))
					case "BF16":
						chunk = binary.LittleEndian.AppendUint16(chunk, backend.RoundBF16(v).Bits())
					case "F16":
						chunk = binary.LittleEndian.AppendUint16(chunk, float16.Fromfloat32(v).Bits())
					}
				}
				if _, err := w.Write(chunk); err != nil {
					return err
				}
				vals = vals[n:]
			}
		}
		return w.Flush()
	})
	if err != nil {
		return fmt.Errorf("model: write %s: %w", path, err)
	}
	return nil
}

// numel is the number of values of shape (1 for a scalar).
func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
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
