package quant

import (
	"fmt"
	"math"
)

// int8Inv is bitsandbytes' 1/127 as it dequantizes (int8_vectorwise_dequant
// multiplies by 7.874015718698502e-3).
const int8Inv = float32(7.874015718698502e-3)

// Int8Tensor is a [Rows, Cols] weight in LLM.int8's row-wise format: Q
// holds round(x·127/absmax) per row, Absmax one scale per output row.
type Int8Tensor struct {
	Rows, Cols int
	Q          []int8
	Absmax     []float32
}

// QuantizeInt8 quantizes the row-major [rows, cols] x as bitsandbytes'
// int8_vectorwise_quant: per row, q = round(x·(127/absmax)), rounding half
// to even as torch.round. A row of zeros gets absmax 0 and codes 0.
func QuantizeInt8(x []float32, rows, cols int) (*Int8Tensor, error) {
	if rows < 0 || cols < 0 || len(x) != rows*cols {
		return nil, fmt.Errorf("%w: %d values for [%d, %d]", errShape, len(x), rows, cols)
	}
	t := &Int8Tensor{Rows: rows, Cols: cols, Q: make([]int8, len(x)), Absmax: make([]float32, rows)}
	for r := range rows {
		row := x[r*cols : (r+1)*cols]
		var m float32
		for _, v := range row {
			m = max(m, float32(math.Abs(float64(v))))
		}
		t.Absmax[r] = m
		if m == 0 {
			continue
		}
		s := 127 / m
		for c, v := range row {
			t.Q[r*cols+c] = int8(math.RoundToEven(float64(v * s)))
		}
	}
	return t, nil
}

// Dequantize writes the values to out (len(out) >= Rows·Cols) and returns
// out[:Rows·Cols]: q·absmax·(1/127) as bitsandbytes computes it.
func (t *Int8Tensor) Dequantize(out []float32) []float32 {
	out = out[:t.Rows*t.Cols]
	for r := range t.Rows {
		s := t.Absmax[r]
		for c := range t.Cols {
			out[r*t.Cols+c] = float32(t.Q[r*t.Cols+c]) * s * int8Inv
		}
	}
	return out
}

// Bytes returns the memory the tensor holds.
func (t *Int8Tensor) Bytes() int { return len(t.Q) + 4*len(t.Absmax) }
