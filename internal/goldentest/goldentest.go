// Package goldentest reads the golden files (numbers TRL and transformers
// computed, in ../shared/golden) that the loss and trainer tests match.
package goldentest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/grpokit/grpokit/internal/sharedtest"
)

// GRPO is the "grpo" object of golden.json: the inputs and the numbers TRL
// computed from them.
type GRPO struct {
	NumGenerations      int                           `json:"num_generations"`
	Epsilon             float64                       `json:"epsilon"`
	EpsilonHigh         float64                       `json:"epsilon_high"`
	Beta                float64                       `json:"beta"`
	Temperature         float64                       `json:"temperature"`
	MaxCompletionLength int                           `json:"max_completion_length"`
	EOS                 int                           `json:"eos_token_id"`
	PromptIDs           [][]int32                     `json:"prompt_ids"`
	PromptMask          [][]int32                     `json:"prompt_mask"`
	CompletionIDs       [][]int32                     `json:"completion_ids"`
	CompletionMask      [][]float32                   `json:"completion_mask"`
	Rewards             []float64                     `json:"rewards"`
	GroupMean           []float64                     `json:"group_mean"`
	GroupStd            []float64                     `json:"group_std"`
	Advantages          []float64                     `json:"advantages"`
	Loss                map[string]map[string]float64 `json:"loss"`
}

// LoadGRPO reads the "grpo" object of ../shared/golden/<kase>/golden.json and
// the F32 tensors of its golden.safetensors; it skips the test when the
// fixtures are absent.
func LoadGRPO(t testing.TB, kase string) (GRPO, map[string]Tensor) {
	t.Helper()
	dir := filepath.Join(sharedtest.Dir(t), "golden", kase)
	data, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		GRPO GRPO `json:"grpo"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("golden.json: %v", err)
	}
	ts, err := ReadSafetensorsF32(filepath.Join(dir, "golden.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return doc.GRPO, ts
}

// Tensor is one F32 tensor of a safetensors file.
type Tensor struct {
	Shape []int
	Data  []float32
}

// rows returns t as [Shape[0]][Shape[1]].
func (t Tensor) Rows() [][]float32 {
	out := make([][]float32, t.Shape[0])
	w := t.Shape[1]
	for i := range out {
		out[i] = t.Data[i*w : (i+1)*w]
	}
	return out
}

// ReadSafetensorsF32 is a minimal reader for the golden files (F32 only).
func ReadSafetensorsF32(path string) (map[string]Tensor, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(raw) < 8 {
		return nil, fmt.Errorf("%s: too short", path)
	}
	n := binary.LittleEndian.Uint64(raw[:8])
	if 8+n > uint64(len(raw)) {
		return nil, fmt.Errorf("%s: header length %d past the end", path, n)
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+n], &header); err != nil {
		return nil, fmt.Errorf("%s: header: %v", path, err)
	}
	body := raw[8+n:]
	out := map[string]Tensor{}
	for name, msg := range header {
		if name == "__metadata__" {
			continue
		}
		var info struct {
			DType   string `json:"dtype"`
			Shape   []int  `json:"shape"`
			Offsets [2]int `json:"data_offsets"`
		}
		if err := json.Unmarshal(msg, &info); err != nil {
			return nil, fmt.Errorf("%s: %s: %v", path, name, err)
		}
		if info.DType != "F32" {
			continue
		}
		b := body[info.Offsets[0]:info.Offsets[1]]
		data := make([]float32, len(b)/4)
		for i := range data {
			data[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		out[name] = Tensor{Shape: info.Shape, Data: data}
	}
	return out, nil
}

// CloseTo reports whether |got − want| ≤ atol + rtol·|want|.
func CloseTo(got, want, atol, rtol float64) bool {
	return math.Abs(got-want) <= atol+rtol*math.Abs(want)
}
