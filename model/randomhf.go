package model

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/grpokit/grpokit/internal/atomicfile"
	"github.com/grpokit/grpokit/internal/backend"
)

// WriteRandomHF writes a Hugging Face model folder for cfg with random
// weights into dir (created if needed): config.json (cfg as MarshalJSON
// writes it) and one model.safetensors holding every tensor of
// cfg.Weights() in dtype "bf16" (default when "") or "f32". Values follow
// New: normal with std 0.02, norms at 1 (Gemma's (1+w) norms: w = 0),
// biases 0, drawn from seed. Tensors are generated and written in chunks of
// 1 Mi values, so memory stays small whatever the model's size (an 8B
// model's 16 GB file needs a few MB). Both files are written to temporary
// names and renamed into place.
//
// It is meant for measurements at real shapes (bench/randomhf); Load reads
// the result like any checkpoint.
func WriteRandomHF(dir string, cfg Config, seed uint64, dtype string) (err error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	var stDType string
	var width int
	switch dtype {
	case "", "bf16", "bfloat16":
		stDType, width = "BF16", 2
	case "f32", "float32":
		stDType, width = "F32", 4
	default:
		return fmt.Errorf("model: write random weights: dtype %q (want bf16 or f32)", dtype)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	// torch_dtype names the weights' dtype, as in a real checkpoint.
	cfgJSON, err := cfg.hfJSON(stDType)
	if err != nil {
		return fmt.Errorf("model: encode config: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, "config.json"), func(f *os.File) error {
		_, err := f.Write(cfgJSON)
		return err
	}); err != nil {
		return err
	}
	specs := cfg.Weights()
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	off := 0
	for _, w := range specs {
		n := width
		for _, d := range w.Shape {
			n *= d
		}
		header[w.Name] = TensorInfo{DType: stDType, Shape: w.Shape, DataOffsets: [2]int{off, off + n}}
		off += n
	}
	js, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if pad := len(js) % 8; pad != 0 {
		js = append(js, []byte(strings.Repeat(" ", 8-pad))...)
	}
	oneNorm := cfg.arch().norm == normW
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	return writeFileAtomic(filepath.Join(dir, "model.safetensors"), func(f *os.File) error {
		bw := bufio.NewWriterSize(f, 1<<20)
		if err := binary.Write(bw, binary.LittleEndian, uint64(len(js))); err != nil {
			return err
		}
		if _, err := bw.Write(js); err != nil {
			return err
		}
		const chunk = 1 << 20
		buf := make([]byte, 0, chunk*width)
		for _, w := range specs {
			n := 1
			for _, d := range w.Shape {
				n *= d
			}
			fill := func() float32 { return float32(0.02 * r.NormFloat64()) }
			switch {
			case isBias(w.Name):
				fill = func() float32 { return 0 }
			case len(w.Shape) == 1 && oneNorm:
				fill = func() float32 { return 1 }
			case len(w.Shape) == 1:
				fill = func() float32 { return 0 }
			}
			for done := 0; done < n; {
				k := min(chunk, n-done)
				buf = buf[:0]
				for range k {
					v := fill()
					if width == 2 {
						buf = binary.LittleEndian.AppendUint16(buf, backend.RoundBF16(v).Bits())
					} else {
						buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
					}
				}
				if _, err := bw.Write(buf); err != nil {
					return err
				}
				done += k
			}
		}
		return bw.Flush()
	})
}

// writeFileAtomic writes path through a temporary file in the same
// directory, renamed into place only when write succeeded.
func writeFileAtomic(path string, write func(f *os.File) error) error {
	if err := atomicfile.Write(path, write); err != nil {
		return fmt.Errorf("model: write %s: %w", path, err)
	}
	return nil
}
