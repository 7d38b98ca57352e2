package model

import (
	"fmt"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// Batch is a left-padded batch of token ids with its attention mask and
// position ids, all [B][T]. Positions may be nil: then Positions(Mask) is used.
type Batch struct {
	IDs, Mask, Positions [][]int
}

// Positions computes HF's position ids for left padding: cumsum(mask)-1 at
// real tokens and 1 at pads (the value at pads is irrelevant).
func Positions(mask [][]int) [][]int {
	out := make([][]int, len(mask))
	for b, row := range mask {
		out[b] = make([]int, len(row))
		n := 0
		for t, m := range row {
			if m != 0 {
				out[b][t] = n
				n++
			} else {
				out[b][t] = 1
			}
		}
	}
	return out
}

// LeftPad pads sequences on the left with pad to a common length
// (at least minLen) and returns the batch with mask and positions.
func LeftPad(seqs [][]int, pad, minLen int) Batch {
	T := minLen
	for _, s := range seqs {
		T = max(T, len(s))
	}
	b := Batch{IDs: make([][]int, len(seqs)), Mask: make([][]int, len(seqs))}
	for i, s := range seqs {
		b.IDs[i] = make([]int, T)
		b.Mask[i] = make([]int, T)
		off := T - len(s)
		for t := range off {
			b.IDs[i][t] = pad
		}
		copy(b.IDs[i][off:], s)
		for t := off; t < T; t++ {
			b.Mask[i][t] = 1
		}
	}
	b.Positions = Positions(b.Mask)
	return b
}

// tensors converts the batch to int32 tensors, validating its shape.
func (b Batch) tensors(vocab int) (ids, mask, pos *tensors.Tensor, err error) {
	B := len(b.IDs)
	if B == 0 || len(b.IDs[0]) == 0 {
		return nil, nil, nil, fmt.Errorf("model: empty batch")
	}
	T := len(b.IDs[0])
	positions := b.Positions
	if positions == nil {
		positions = Positions(b.Mask)
	}
	if len(b.Mask) != B || len(positions) != B {
		return nil, nil, nil, fmt.Errorf("model: batch has %d id rows, %d mask rows, %d position rows", B, len(b.Mask), len(positions))
	}
	flat := func(rows [][]int, what string, check func(int) bool) ([]int32, error) {
		out := make([]int32, 0, B*T)
		for i, r := range rows {
			if len(r) != T {
				return nil, fmt.Errorf("model: batch %s row %d has length %d, want %d", what, i, len(r), T)
			}
			for _, v := range r {
				if !check(v) {
					return nil, fmt.Errorf("model: batch %s row %d: value %d out of range", what, i, v)
				}
				out = append(out, int32(v))
			}
		}
		return out, nil
	}
	fi, err := flat(b.IDs, "ids", func(v int) bool { return v >= 0 && v < vocab })
	if err != nil {
		return nil, nil, nil, err
	}
	fm, err := flat(b.Mask, "mask", func(v int) bool { return v == 0 || v == 1 })
	if err != nil {
		return nil, nil, nil, err
	}
	fp, err := flat(positions, "positions", func(v int) bool { return v >= 0 && v < 1<<24 })
	if err != nil {
		return nil, nil, nil, err
	}
	return tensors.FromFlatDataAndDimensions(fi, B, T), tensors.FromFlatDataAndDimensions(fm, B, T),
		tensors.FromFlatDataAndDimensions(fp, B, T), nil
}

// execCacheSize bounds the shapes one executor compiles. GoMLX's default
// (32) is too few for decode: a multi-turn Env's batches vary in rows,
// prompt bucket and suffix-cache bucket, and a full cache is an error,
// not an eviction.
const execCacheSize = 1024

// exec returns the cached executor for key, building it with fn once.
func (m *Model) exec(key string, fn any) (*mlctx.Exec, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.execs[key]; ok {
		return e, nil
	}
	e, err := mlctx.NewExecAny(m.backend, m.ctx, fn)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", key, err)
	}
	e.SetMaxCache(execCacheSize)
	m.execs[key] = e
	return e, nil
}

// Logits runs the forward pass (with the adapter, if attached) and returns
// float32 logits, flat [B*T*V] in row-major order.
func (m *Model) Logits(b Batch) (logits []float32, err error) {
	defer catch("logits", &err)
	ids, mask, pos, err := b.tensors(m.cfg.VocabSize)
	if err != nil {
		return nil, err
	}
	e, err := m.exec("logits", func(ctx *mlctx.Context, ids, mask, pos *Node) *Node {
		return m.LogitsGraph(ctx, ids, mask, pos)
	})
	if err != nil {
		return nil, err
	}
	out, err := e.Exec(ids, mask, pos)
	if err != nil {
		return nil, fmt.Errorf("model: logits: %w", err)
	}
	return tensors.CopyFlatData[float32](out[0])
}

// TokenLogProbs runs the forward pass (with the adapter, if attached) and
// returns log p(ids[b][t+1] | ids[b][:t+1]) as [B][T-1]; values at pad
// positions are meaningless.
func (m *Model) TokenLogProbs(b Batch) (lp [][]float32, err error) {
	defer catch("token log-probs", &err)
	ids, mask, pos, err := b.tensors(m.cfg.VocabSize)
	if err != nil {
		return nil, err
	}
	B, T := len(b.IDs), len(b.IDs[0])
	if T < 2 {
		return nil, fmt.Errorf("model: token log-probs need at least 2 tokens per row, got %d", T)
	}
	targets := make([]int32, B*T)
	for i := range B {
		for t := range T - 1 {
			targets[i*T+t] = int32(b.IDs[i][t+1])
		}
	}
	e, err := m.exec("logprobs", func(ctx *mlctx.Context, ids, mask, pos, tg *Node) *Node {
		lp, _ := TokenLogProbs(m.LogitsGraph(ctx, ids, mask, pos), tg, 1)
		return lp
	})
	if err != nil {
		return nil, err
	}
	out, err := e.Exec(ids, mask, pos, tensors.FromFlatDataAndDimensions(targets, B, T))
	if err != nil {
		return nil, fmt.Errorf("model: token log-probs: %w", err)
	}
	flat, err := tensors.CopyFlatData[float32](out[0])
	if err != nil {
		return nil, err
	}
	lp = make([][]float32, B)
	for i := range B {
		lp[i] = flat[i*T : i*T+T-1]
	}
	return lp, nil
}
