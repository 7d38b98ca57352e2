package model

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/internal/quant"
)

// toFP16 rounds a positive normal float32 to fp16 bits (truncating: any
// fp16 will do for a test scale).
func toFP16(x float32) uint16 {
	b := math.Float32bits(x)
	e := int(b>>23&0xff) - 127 + 15
	e = min(max(e, 1), 30)
	return uint16(e)<<10 | uint16(b>>13&0x3ff)
}

// randomBlocks returns blocks of type t for the values w (rows of whole
// blocks): random codes under scales of w's magnitude per block, so the
// decoded model computes numbers of a sensible size.
func randomBlocks(r *rand.Rand, t quant.GGML, w []float32) []byte {
	vals, size := t.Block()
	out := make([]byte, len(w)/vals*size)
	for b := range len(w) / vals {
		blk := out[b*size : (b+1)*size]
		for i := range blk {
			blk[i] = byte(r.UintN(256))
		}
		var amax float32
		for _, v := range w[b*vals : (b+1)*vals] {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		amax = max(amax, 1e-3)
		sign := uint16(r.UintN(2)) << 15
		switch t {
		case quant.Q4_0:
			binary.LittleEndian.PutUint16(blk, toFP16(amax/8))
		case quant.Q4_1:
			binary.LittleEndian.PutUint16(blk, toFP16(amax/8))
			binary.LittleEndian.PutUint16(blk[2:], toFP16(amax)|0x8000)
		case quant.Q8_0:
			binary.LittleEndian.PutUint16(blk, toFP16(amax/128)|sign)
		case quant.Q4_K:
			binary.LittleEndian.PutUint16(blk, toFP16(amax/(8*63)))
			binary.LittleEndian.PutUint16(blk[2:], toFP16(amax/63))
		}
	}
	return out
}

// TestGGUFStorageMatchesFloat32: a model whose matrices are held in
// Q4_0, Q4_1, Q8_0 or Q4_K blocks (FromBlocks under StorageGGUF, the
// embedding and tied LM head included) gives the logits and gradients (to
// the trainable norms, through g·W of every product) of a float32 model of
// the blocks' values (quant.DecodeGGML, ggml's arithmetic) bit for bit,
// with the fused products and with the in-graph dequantization; the
// blocks come back from Weight as those values, and the weights take the
// bytes HeldBytes counts.
func TestGGUFStorageMatchesFloat32(t *testing.T) {
	cfg := Config{
		ModelType: "llama", VocabSize: 96, HiddenSize: 256, IntermediateSize: 512,
		NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 64, MaxPositionEmbeddings: 64,
		RMSNormEps: 1e-5, RopeTheta: 10000, TieWordEmbeddings: true, HiddenAct: "silu", BOSTokenID: 1, EOSTokenIDs: []int{2},
	}
	base, err := New(cfg, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	batch := LeftPad([][]int{{1, 5, 9, 33, 70, 2}, {1, 44, 8}}, 0, 0)
	for _, typ := range []quant.GGML{quant.Q4_0, quant.Q4_1, quant.Q8_0, quant.Q4_K} {
		t.Run(typ.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(typ), 1))
			blocks := map[string][]byte{}
			values := map[string][]float32{}
			for _, w := range cfg.Weights() {
				data, _, err := base.Weight(w.Name)
				if err != nil {
					if w.Name == "lm_head.weight" {
						continue
					}
					t.Fatal(err)
				}
				values[w.Name] = data
				if len(w.Shape) == 2 {
					blocks[w.Name] = randomBlocks(r, typ, data)
					quant.DecodeGGML(typ, blocks[w.Name], data)
				}
			}
			src := func(name string, _ []int) ([]float32, error) { return append([]float32(nil), values[name]...), nil }
			bsrc := func(name string, _ []int) (string, []byte, error) {
				if b, ok := blocks[name]; ok {
					return typ.String(), b, nil
				}
				return "F32", nil, nil
			}
			f32, err := FromWeights(cfg, src, nil)
			if err != nil {
				t.Fatal(err)
			}
			gg, err := FromBlocks(cfg, src, bsrc, &Options{Storage: StorageGGUF})
			if err != nil {
				t.Fatal(err)
			}
			var held int64
			for v := range gg.Context().IterVariables() {
				held += int64(v.Shape().Memory())
			}
			if want := cfg.HeldBytes(StorageGGUF, typ.String(), false); held != want {
				t.Errorf("weights hold %d bytes, HeldBytes counts %d", held, want)
			}
			for name, want := range values {
				got, _, err := gg.Weight(name)
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("Weight(%s)[%d] = %g, want %g", name, i, got[i], want[i])
					}
				}
			}
			wantLogits, err := f32.Logits(batch)
			if err != nil {
				t.Fatal(err)
			}
			f32.SetBaseTrainable(false)
			for _, v := range f32.BaseVariables() {
				if v.Shape().Rank() == 1 {
					v.SetTrainable(true) // the norms, as in gg
				}
			}
			wantLoss, wantGrads, _ := lossAndGrads(t, f32, batch)
			for _, fused := range []bool{true, false} {
				func() {
					defer func(v bool) { fuseLowp = v }(fuseLowp)
					fuseLowp = fused
					gg.resetExecs()
					n0 := backend.LowpProducts()
					logits, err := gg.Logits(batch)
					if err != nil {
						t.Fatal(err)
					}
					loss, grads, _ := lossAndGrads(t, gg, batch)
					if n := backend.LowpProducts() - n0; fused == (n == 0) {
						t.Fatalf("fused=%v: %d products ran on the blocks", fused, n)
					}
					for i := range logits {
						if math.Float32bits(logits[i]) != math.Float32bits(wantLogits[i]) {
							t.Fatalf("fused=%v: logits[%d] = %g, float32 model %g", fused, i, logits[i], wantLogits[i])
						}
					}
					if loss != wantLoss || len(grads) != len(wantGrads) || len(grads) == 0 {
						t.Fatalf("fused=%v: loss %g (%d gradients), float32 model %g (%d)", fused, loss, len(grads), wantLoss, len(wantGrads))
					}
					for j := range grads {
						a, b := grads[j].Value().([]float32), wantGrads[j].Value().([]float32)
						for i := range a {
							if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
								t.Fatalf("fused=%v: gradient %d [%d] = %g, float32 model %g", fused, j, i, a[i], b[i])
							}
						}
					}
				}()
			}
			// Setting a weight held in blocks (LoRA's Merge) makes it a
			// frozen float32 weight of exactly the values given.
			const q = "model.layers.0.self_attn.q_proj.weight"
			w := values[q]
			for i := range w {
				w[i] *= 1.5
			}
			if err := gg.SetWeight(q, w, []int{256, 256}); err != nil {
				t.Fatal(err)
			}
			got, _, err := gg.Weight(q)
			if err != nil || gg.formatOf(q) != "f32" || gg.variable(q).Trainable {
				t.Fatalf("after SetWeight: %v, held as %q, trainable %v", err, gg.formatOf(q), gg.variable(q).Trainable)
			}
			for i := range w {
				if got[i] != w[i] {
					t.Fatalf("after SetWeight: [%d] = %g, want %g", i, got[i], w[i])
				}
			}
			if _, err := gg.Logits(batch); err != nil {
				t.Fatal(err)
			}
		})
	}
}
