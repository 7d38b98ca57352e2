package gguf

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/x448/float16"
)

// goldenDequant is testdata/dequant/golden.json, written by gen.py from
// the gguf package's gguf.quants.dequantize (gguf 0.19.0).
type goldenDequant struct {
	Reference string `json:"reference"`
	Types     []struct {
		Type       string   `json:"type"`
		ID         uint32   `json:"id"`
		Cases      []string `json:"cases"`
		BlockBytes int      `json:"block_bytes"`
		Data       string   `json:"data"`
		Expected   string   `json:"expected"`
	} `json:"types"`
}

// TestDequantizeMatchesGGUFPackage compares every value Dequantize
// decodes, bit for bit, with the gguf package's dequantize (which gen.py
// also checked against ggml's C, bit for bit) on random and edge-case
// blocks of every type grpokit reads.
func TestDequantizeMatchesGGUFPackage(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "dequant", "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g goldenDequant
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	seen := map[TensorType]bool{}
	for _, tc := range g.Types {
		t.Run(tc.Type, func(t *testing.T) {
			tt := TensorType(tc.ID)
			if tt.String() != tc.Type {
				t.Fatalf("type %d is %s here, %s in the golden file", tc.ID, tt, tc.Type)
			}
			seen[tt] = true
			data, err := hex.DecodeString(tc.Data)
			if err != nil {
				t.Fatal(err)
			}
			exp, err := hex.DecodeString(tc.Expected)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, len(exp)/4)
			if err := Dequantize(tt, data, got); err != nil {
				t.Fatal(err)
			}
			per := len(got) / len(tc.Cases)
			bad := 0
			for i, v := range got {
				want := binary.LittleEndian.Uint32(exp[4*i:])
				if math.Float32bits(v) != want {
					if bad++; bad <= 5 {
						t.Errorf("value %d (block %d, %s): got %g (%#08x), gguf.quants %g (%#08x)",
							i, i/per, tc.Cases[i/per], v, math.Float32bits(v), math.Float32frombits(want), want)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d values differ", bad, len(got))
			}
			t.Logf("%d blocks (%d values): bit-exact against %s", len(tc.Cases), len(got), g.Reference)
		})
	}
	for _, tt := range []TensorType{TypeF32, TypeF16, TypeBF16, TypeQ4_0, TypeQ4_1, TypeQ5_0, TypeQ5_1, TypeQ8_0, TypeQ2_K, TypeQ3_K, TypeQ4_K, TypeQ5_K, TypeQ6_K} {
		if !seen[tt] {
			t.Errorf("the golden file has no %s blocks", tt)
		}
	}
}

// TestDequantizeF16AllValues converts every half-precision value and
// checks it against the IEEE 754 formula in float64: ±2^(e−15)·(1+m/1024),
// subnormals ±2⁻¹⁴·m/1024, infinities; a NaN keeps its payload and gets
// the quiet bit, as ggml's ggml_compute_fp16_to_fp32 does (gen.py's
// --ggml check: numpy, which keeps a signaling NaN signaling, differs
// from ggml in exactly those 1022 values).
func TestDequantizeF16AllValues(t *testing.T) {
	data := make([]byte, 2<<16)
	for h := range 1 << 16 {
		binary.LittleEndian.PutUint16(data[2*h:], uint16(h))
	}
	got := make([]float32, 1<<16)
	if err := Dequantize(TypeF16, data, got); err != nil {
		t.Fatal(err)
	}
	for h := range 1 << 16 {
		sign, e, m := h>>15, (h>>10)&0x1f, h&0x3ff
		var want uint32
		switch {
		case e == 0x1f && m != 0:
			want = uint32(sign)<<31 | 0x7f800000 | uint32(m|0x200)<<13
		case e == 0x1f:
			want = math.Float32bits(float32(math.Inf(1 - 2*sign)))
		default:
			x := math.Ldexp(float64(m), -24) // subnormal
			if e > 0 {
				x = math.Ldexp(1+float64(m)/1024, e-15)
			}
			if sign == 1 {
				x = -x
			}
			want = math.Float32bits(float32(x))
		}
		if g := math.Float32bits(got[h]); g != want {
			t.Fatalf("fp16 %#04x: got %#08x, want %#08x", h, g, want)
		}
	}
}

// TestDequantizeErrors: a type without a decoder names the type, and a
// length that is not whole blocks is refused.
func TestDequantizeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    TensorType
		data []byte
		n    int
		want string
		err  error
	}{
		{"Q8_K", TypeQ8_K, make([]byte, 292), 256, "tensor type Q8_K", ErrUnsupported},
		{"IQ4_XS", 23, make([]byte, 136), 256, "tensor type IQ4_XS", ErrUnsupported},
		{"undefined type", 99, nil, 0, "tensor type ggml_type(99)", ErrUnsupported},
		{"partial block", TypeQ4_K, make([]byte, 144), 255, "255 values of Q4_K: not a whole number of 256-value blocks", nil},
		{"short data", TypeQ8_0, make([]byte, 33), 32, "32 values of Q8_0 take 34 bytes, got 33", nil},
		{"long data", TypeF16, make([]byte, 6), 2, "2 values of F16 take 4 bytes, got 6", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Dequantize(tc.t, tc.data, make([]float32, tc.n))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "gguf: ") {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("%v does not wrap %v", err, tc.err)
			}
		})
	}
}

// TestFloat32NamesTensor: File.Float32 on a tensor of a type without a
// decoder names the file, the tensor and the type.
func TestFloat32NamesTensor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q8k.gguf")
	writeTestFile(t, path, nil, []testTensor{{name: "blk.0.ffn_up.weight", shape: []int{2, 256}, typ: TypeQ8_K}})
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, _, err = f.Float32("blk.0.ffn_up.weight")
	if err == nil || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("got %v, want ErrUnsupported", err)
	}
	for _, s := range []string{path, "blk.0.ffn_up.weight", "Q8_K"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not name %s", err, s)
		}
	}
}

// benchTypes are the types BenchmarkDequantize measures.
var benchTypes = []TensorType{TypeF16, TypeBF16, TypeQ8_0, TypeQ4_0, TypeQ4_1, TypeQ5_0, TypeQ5_1, TypeQ2_K, TypeQ3_K, TypeQ4_K, TypeQ5_K, TypeQ6_K}

// BenchmarkDequantize decodes 4 Mi values (an 576×7282 matrix's worth)
// of each type; MB/s counts the float32 output (4 bytes a value).
func BenchmarkDequantize(b *testing.B) {
	const n = 4 << 20
	for _, tt := range benchTypes {
		b.Run(tt.String(), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, uint64(tt)))
			data := randomBlocks(r, tt, n)
			if tt == TypeF16 { // weights, not random bits: N(0, 0.02²)
				for i := range n {
					binary.LittleEndian.PutUint16(data[2*i:], float16.Fromfloat32(float32(r.NormFloat64()*0.02)).Bits())
				}
			}
			dst := make([]float32, n)
			b.SetBytes(4 * n)
			b.ReportAllocs()
			for b.Loop() {
				if err := Dequantize(tt, data, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// randomBlocks returns n values of tt as random blocks with finite fp16
// fields (every byte pattern is otherwise a valid block).
func randomBlocks(r *rand.Rand, tt TensorType, n int) []byte {
	elems, size, _ := tt.block()
	data := make([]byte, n/elems*size)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for off := 0; off < len(data); off += size {
		for _, f := range fp16Fields[tt] {
			binary.LittleEndian.PutUint16(data[off+f:], uint16(r.Uint32())&0xbbff) // exponent < 31
		}
	}
	return data
}

// fp16Fields are the byte offsets of a block's fp16 fields.
var fp16Fields = map[TensorType][]int{
	TypeF16: {0}, TypeQ4_0: {0}, TypeQ4_1: {0, 2}, TypeQ5_0: {0}, TypeQ5_1: {0, 2}, TypeQ8_0: {0},
	TypeQ2_K: {80, 82}, TypeQ3_K: {108}, TypeQ4_K: {0, 2}, TypeQ5_K: {0, 2}, TypeQ6_K: {208},
}

// TestDequantizeNoAllocs: decoding allocates nothing.
func TestDequantizeNoAllocs(t *testing.T) {
	for _, tt := range benchTypes {
		data := randomBlocks(rand.New(rand.NewPCG(2, 3)), tt, 1024)
		dst := make([]float32, 1024)
		if a := testing.AllocsPerRun(10, func() { _ = Dequantize(tt, data, dst) }); a != 0 {
			t.Errorf("%s: %v allocations a call", tt, a)
		}
	}
}

func ExampleDequantize() {
	// One Q8_0 block: the fp16 scale 0.5, then 32 int8 quants.
	block := append([]byte{0x00, 0x38}, make([]byte, 32)...)
	block[2], block[3] = 3, 0xfe // 3 and −2
	out := make([]float32, 32)
	if err := Dequantize(TypeQ8_0, block, out); err != nil {
		panic(err)
	}
	fmt.Println(out[:3])
	// Output: [1.5 -1 0]
}
