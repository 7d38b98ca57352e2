package gguf

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/internal/quant"
	"github.com/grpokit/grpokit/internal/sharedtest"
	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/model"
)

// TestDecodeGGMLAtMatchesDequantize: the fused products decode runs of
// values starting anywhere inside a block (quant.DecodeGGMLAt); each run
// is the whole tensor's Dequantize (itself checked against gguf-py) bit
// for bit, on random blocks whose fp16 scales cover normal, subnormal,
// zero and negative values.
func TestDecodeGGMLAtMatchesDequantize(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, typ := range []TensorType{TypeQ4_0, TypeQ4_1, TypeQ8_0, TypeQ4_K} {
		qt, ok := quant.ParseGGML(typ.String())
		if !ok {
			t.Fatalf("%s is not a block type of quant", typ)
		}
		vals, size := qt.Block()
		nb := 40
		data := make([]byte, nb*size)
		for i := range data {
			data[i] = byte(r.UintN(256))
		}
		for b := range nb {
			// Scales: keep them finite (ggml makes NaN·0 NaN too, but
			// NaN bits are not compared), some subnormal.
			for _, off := range []int{0, 2} {
				h := uint16(r.UintN(0x7c00)) | uint16(r.UintN(2))<<15
				if b%5 == 0 {
					h &= 0x83ff // subnormal
				}
				binary.LittleEndian.PutUint16(data[b*size+off:], h)
			}
		}
		want := make([]float32, nb*vals)
		if err := Dequantize(typ, data, want); err != nil {
			t.Fatal(err)
		}
		for range 50 {
			off := r.IntN(len(want))
			n := r.IntN(len(want) - off + 1)
			part := make([]float32, n)
			quant.DecodeGGMLAt(qt, data, part, off)
			for i := range part {
				if math.Float32bits(part[i]) != math.Float32bits(want[off+i]) {
					t.Fatalf("%s: values %d+%d: %g, Dequantize %g", typ, off, i, part[i], want[off+i])
				}
			}
		}
	}
}

// heldVariableBytes sums the frozen variables of the model's weights, as
// the trainer's memory plan does (grpo.LMPolicy.MemoryRequest).
func heldVariableBytes(m *model.Model) (held int64, blocks int) {
	for v := range m.Context().IterVariables() {
		if sc := v.Scope(); strings.HasPrefix(sc, "/model") || strings.HasPrefix(sc, "/lm_head") {
			held += int64(v.Shape().Memory())
			if strings.HasPrefix(v.Name(), "weight_q") {
				blocks++
			}
		}
	}
	return held, blocks
}

// loraGrads attaches a LoRA adapter (seeded, with a nonzero B) to m and
// returns the loss's gradients with respect to the adapter.
func loraGrads(t *testing.T, m *model.Model, b model.Batch) [][]float32 {
	t.Helper()
	a, err := lora.Attach(m, lora.Config{R: 4, Alpha: 8, Seed: 3, TargetModules: []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range a.Variables() {
		if strings.Contains(v.Scope(), "lora_B") {
			d := make([]float32, v.Shape().Size())
			for i := range d {
				d[i] = float32(math.Sin(float64(i))) * 0.05
			}
			if err := v.SetValue(tensors.FromFlatDataAndDimensions(d, v.Shape().Dimensions...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows := func(x [][]int) *tensors.Tensor {
		out := make([][]int32, len(x))
		for i, r := range x {
			for _, v := range r {
				out[i] = append(out[i], int32(v))
			}
		}
		return tensors.FromValue(out)
	}
	pos := b.Positions
	if pos == nil {
		pos = model.Positions(b.Mask)
	}
	e, err := mlctx.NewExec(m.Backend(), m.Context(), func(ctx *mlctx.Context, ids, mask, pos *Node) []*Node {
		lp, _ := model.TokenLogProbs(m.LogitsGraph(ctx, ids, mask, pos), ids, 1)
		loss := ReduceAllSum(Mul(lp, ConvertDType(mask, lp.DType())))
		return ctx.BuildTrainableVariablesGradientsGraph(loss)
	})
	if err != nil {
		t.Fatal(err)
	}
	grads, err := e.Exec(rows(b.IDs), rows(b.Mask), rows(pos))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]float32
	for _, g := range grads {
		d, err := tensors.CopyFlatData[float32](g)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		t.Fatal("no LoRA gradients")
	}
	return out
}

// sameBits fails t unless a and b are the same float32 numbers bit for bit.
func sameBits(t *testing.T, what string, a, b []float32) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d and %d values", what, len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s[%d]: blocks %g, float32 %g", what, i, a[i], b[i])
		}
	}
}

// checkBlockStorage loads the file at path in float32 and under
// model.StorageGGUF and holds the second to the first: the same logits and
// LoRA gradients bit for bit, the products run on the blocks (fused), and
// the weights take the bytes File.HeldBytes counts, those of the blocks.
func checkBlockStorage(t *testing.T, path string, b model.Batch, grads bool) {
	t.Helper()
	f32, err := LoadModel(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	gg, err := LoadModel(path, &model.Options{Storage: model.StorageGGUF})
	if err != nil {
		t.Fatal(err)
	}
	held, nblocks := heldVariableBytes(gg)
	if nblocks == 0 {
		t.Fatal("no weight is held in its blocks")
	}
	g, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := g.HeldBytes(gg.Config(), model.StorageGGUF, false)
	g.Close()
	if err != nil {
		t.Fatal(err)
	}
	if held != want {
		t.Errorf("weights hold %d bytes, HeldBytes counts %d", held, want)
	}
	f32held, _ := heldVariableBytes(f32)
	t.Logf("%d matrices in blocks: weights %d bytes (float32: %d)", nblocks, held, f32held)
	n0 := backend.LowpProducts()
	lg, err := gg.Logits(b)
	if err != nil {
		t.Fatal(err)
	}
	if backend.FusedLowp(gg.Backend()) && backend.LowpProducts() == n0 {
		t.Error("no product ran on the blocks")
	}
	lf, err := f32.Logits(b)
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, "logits", lg, lf)
	if grads {
		gb, gf := loraGrads(t, gg, b), loraGrads(t, f32, b)
		if len(gb) != len(gf) {
			t.Fatalf("%d and %d gradients", len(gb), len(gf))
		}
		for i := range gb {
			sameBits(t, "LoRA gradient", gb[i], gf[i])
		}
	}
}

// TestBlockStorageGolden exports golden models as Q8_0 and Q4_0 files and
// holds the block-stored models to the float32 models of the same files.
func TestBlockStorageGolden(t *testing.T) {
	tmp := t.TempDir()
	for _, c := range []string{"llama-tiny", "qwen3-tiny", "gemma3-tiny"} {
		dir := sharedtest.Dir(t, "golden", c)
		ref := readGolden(t, dir)
		b := model.LeftPad(ref.prompts, 0, 0)
		for _, dtype := range []string{"Q8_0", "Q4_0"} {
			t.Run(c+"/"+dtype, func(t *testing.T) {
				path := filepath.Join(tmp, c+"-"+dtype+".gguf")
				if _, err := Export(context.Background(), Source{ModelDir: dir}, path, ExportOptions{DType: dtype}); err != nil {
					t.Fatal(err)
				}
				checkBlockStorage(t, path, b, true)
			})
		}
	}
}

// TestBlockStorageSmolLM2: the real SmolLM2-135M-Instruct Q4_1 file (Q8_0
// embedding) under model.StorageGGUF gives the float32 model's logits.
func TestBlockStorageSmolLM2(t *testing.T) {
	path := smollm2Path(t)
	checkBlockStorage(t, path, model.LeftPad([][]int{{1, 504, 3287, 314, 253, 1345, 30}, {1, 9690, 28, 2}}, 0, 0), false)
}

// BenchmarkSmolLM2LoRAStep times one LoRA forward and backward pass (rank
// 8 on every projection, one row of 128 tokens) on the real SmolLM2 Q4_1
// file held as its own blocks, as NF4 (the file's weights quantized
// again) and as bfloat16, and reports the bytes the base's weights take
// and the CPU time a pass takes (steadier than wall time on a shared
// machine).
// Run: GRPOKIT_SMOLLM2_GGUF=path go test ./gguf -run - -bench SmolLM2 -benchtime 3x
func BenchmarkSmolLM2LoRAStep(b *testing.B) {
	path := smollm2Path(b)
	for _, st := range []model.Storage{model.StorageGGUF, model.StorageNF4, model.StorageBF16} {
		b.Run(string(st), func(b *testing.B) {
			m, err := LoadModel(path, &model.Options{Storage: st})
			if err != nil {
				b.Fatal(err)
			}
			held, _ := heldVariableBytes(m)
			if _, err := lora.Attach(m, lora.Config{R: 8, Alpha: 16, Seed: 1, TargetModules: []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}}); err != nil {
				b.Fatal(err)
			}
			ids := make([][]int32, 1)
			mask := make([][]int32, 1)
			pos := make([][]int32, 1)
			for i := range 128 {
				ids[0] = append(ids[0], int32(1+(i*7919)%4000))
				mask[0] = append(mask[0], 1)
				pos[0] = append(pos[0], int32(i))
			}
			e, err := mlctx.NewExec(m.Backend(), m.Context(), func(ctx *mlctx.Context, ids, mask, pos *Node) []*Node {
				lp, _ := model.TokenLogProbs(m.LogitsGraph(ctx, ids, mask, pos), ids, 1)
				loss := ReduceAllSum(Mul(lp, ConvertDType(mask, lp.DType())))
				return ctx.BuildTrainableVariablesGradientsGraph(loss)
			})
			if err != nil {
				b.Fatal(err)
			}
			in := []any{tensors.FromValue(ids), tensors.FromValue(mask), tensors.FromValue(pos)}
			if _, err := e.Exec(in...); err != nil { // compile
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu := cpuSeconds()
			for range b.N {
				if _, err := e.Exec(in...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(held), "weight-bytes")
		})
	}
}
