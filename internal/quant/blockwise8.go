package quant

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
)

// DoubleBlockSize is the block of bitsandbytes' double quantization: the
// NF4 absmax are quantized to 8 bits with one scale per 256 of them.
const DoubleBlockSize = 256

// Blockwise8 is bitsandbytes' quantize_blockwise of a vector as the double
// quantization of NF4 uses it: Offset (the mean) is subtracted, then each
// block of DoubleBlockSize values is divided by its absmax and mapped to
// the nearest value of DynamicMap.
type Blockwise8 struct {
	N      int
	Codes  []byte
	Absmax []float32 // one per block
	Offset float32
}

// QuantizeBlockwise8 quantizes x as quantize_4bit(compress_statistics=True)
// does with its absmax: offset = mean(x), then quantize_blockwise(x −
// offset, blocksize=256) with the signed dynamic map. A value exactly
// between two map entries takes the lower one.
func QuantizeBlockwise8(x []float32) *Blockwise8 {
	n := len(x)
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	q := &Blockwise8{N: n, Codes: make([]byte, n)}
	if n > 0 {
		q.Offset = float32(sum / float64(n))
	}
	dm := DynamicMap()
	blocks := (n + DoubleBlockSize - 1) / DoubleBlockSize
	q.Absmax = make([]float32, blocks)
	for b := range blocks {
		lo, hi := b*DoubleBlockSize, min(n, (b+1)*DoubleBlockSize)
		var m float32
		for _, v := range x[lo:hi] {
			m = max(m, float32(math.Abs(float64(v-q.Offset))))
		}
		q.Absmax[b] = m
		inv := 1 / m
		for i := lo; i < hi; i++ {
			q.Codes[i] = nearest(dm[:], (x[i]-q.Offset)*inv)
		}
	}
	return q
}

// nearest returns the index of the value of the sorted table closest to v
// (the lower one on a tie); NaN (a zero block) maps to the entry 0.
func nearest(table []float32, v float32) byte {
	if v != v {
		v = 0
	}
	i := sort.Search(len(table), func(i int) bool { return table[i] >= v })
	switch {
	case i == 0:
		return 0
	case i == len(table):
		return byte(len(table) - 1)
	}
	if table[i]-v < v-table[i-1] {
		return byte(i)
	}
	return byte(i - 1)
}

// Dequantize returns the N values: DynamicMap[code]·absmax + offset.
func (q *Blockwise8) Dequantize() []float32 {
	dm := DynamicMap()
	out := make([]float32, q.N)
	for i, c := range q.Codes {
		out[i] = dm[c]*q.Absmax[i/DoubleBlockSize] + q.Offset
	}
	return out
}

// Bytes returns the memory the quantized vector holds.
func (q *Blockwise8) Bytes() int { return len(q.Codes) + 4*len(q.Absmax) + 4 }

// Validate checks that the slices agree with N.
func (q *Blockwise8) Validate() error {
	if len(q.Codes) != q.N || len(q.Absmax) != (q.N+DoubleBlockSize-1)/DoubleBlockSize {
		return fmt.Errorf("quant: blockwise8: %d codes and %d absmax for %d values", len(q.Codes), len(q.Absmax), q.N)
	}
	return nil
}

var (
	dynOnce sync.Once
	dynMap  [256]float32
)

// DynamicMap returns bitsandbytes' create_dynamic_map(signed=True,
// max_exponent_bits=7, total_bits=8), sorted: for i = 0…6, the midpoints
// of linspace(0.1, 1, 2^i+1) scaled by ±10^(i−6), then 0 and 1. It is
// computed in float32 as torch does (linspace's two-sided formula).
func DynamicMap() [256]float32 {
	dynOnce.Do(func() {
		var data []float32
		for i := range 7 {
			b := linspace32(0.1, 1, 1<<i+1)
			scale := float32(math.Pow(10, float64(i-6)))
			for j := range len(b) - 1 {
				mean := (b[j] + b[j+1]) / 2
				data = append(data, scale*mean, -scale*mean)
			}
		}
		data = append(data, 0, 1)
		slices.Sort(data)
		copy(dynMap[:], data)
	})
	return dynMap
}

// linspace32 is torch.linspace in float32: start + step·i for the first
// half, end − step·(n−1−i) for the second.
func linspace32(start, end float32, n int) []float32 {
	out := make([]float32, n)
	step := (end - start) / float32(n-1)
	for i := range out {
		if i < n/2 {
			out[i] = start + step*float32(i)
		} else {
			out[i] = end - step*float32(n-1-i)
		}
	}
	return out
}
